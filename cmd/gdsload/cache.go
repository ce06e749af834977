package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
	"github.com/gdsload/gdsload/vfs/cache"
)

// cacheEnv names the environment variable that sets the cache folder
// when --cache is not given.
const cacheEnv = "GDSLOAD_CACHE"

// cacheFlags are the flags of commands that may read s3:// and rdmafs://
// files through a node-local cache.
type cacheFlags struct {
	dir, limit string
	ahead      int          // iterate's --cache-ahead
	on         bool         // the command has the flags (addFlags)
	c          *cache.Cache // opened by options
}

func (f *cacheFlags) addFlags(fs *pflag.FlagSet) {
	f.on = true
	fs.StringVar(&f.dir, "cache", "", "folder on a local disk in which to keep copies of s3:// and rdmafs:// files, shared by the processes of the node (default: $"+cacheEnv+"; none when unset)")
	fs.StringVar(&f.limit, "cache-limit", "", fmt.Sprintf("most bytes the --cache folder holds, such as 200GiB (default: %g of its file system's free space)", cache.DefaultLimitFraction))
}

// addAheadFlag adds iterate's --cache-ahead.
func (f *cacheFlags) addAheadFlag(fs *pflag.FlagSet) {
	fs.IntVar(&f.ahead, "cache-ahead", 0, fmt.Sprintf("download this many shards ahead of the one being read into the --cache folder, in this rank's order (0 to %d)", iterator.MaxCacheAhead))
}

// open opens the cache the flags or the environment name; nil when none.
func (f *cacheFlags) open() (*cache.Cache, error) {
	dir := f.dir
	if dir == "" {
		dir = os.Getenv(cacheEnv)
	}
	if f.ahead < 0 || f.ahead > iterator.MaxCacheAhead {
		return nil, usagef("--cache-ahead %d: want 0 to %d", f.ahead, iterator.MaxCacheAhead)
	}
	if dir == "" {
		if f.limit != "" || f.ahead != 0 {
			return nil, usagef("--cache-limit and --cache-ahead need --cache DIR or $%s", cacheEnv)
		}
		return nil, nil
	}
	var opts []cache.Option
	if f.limit != "" {
		n, err := humanize.ParseBytes(f.limit)
		if err != nil || n == 0 {
			return nil, usagef("--cache-limit %q: want a positive size such as 200GiB", f.limit)
		}
		opts = append(opts, cache.WithLimit(n))
	}
	return cache.Open(dir, opts...)
}

// options returns the vfs option that serves remote files through the
// cache, opening it; none when no cache is set or the command has no
// cache flags (bench measures the store, not a cache).
func (f *cacheFlags) options() ([]vfs.Option, error) {
	if !f.on {
		return nil, nil
	}
	c, err := f.open()
	if err != nil || c == nil {
		return nil, err
	}
	f.c = c
	return []vfs.Option{cache.WithCache(c)}, nil
}

// checkShards fails, before a run starts, when the cache cannot hold the
// dataset's largest shard; nothing without a cache.
func (f *cacheFlags) checkShards(ds *iterator.Dataset) error {
	if f.c == nil {
		return nil
	}
	for _, sh := range ds.Shards {
		if err := f.c.CheckFits(sh.Name, sh.Bytes); err != nil {
			return usagef("--cache-limit: %v", err)
		}
	}
	return nil
}

// cacheAhead is --cache-ahead when a cache is open, else 0 (a local
// dataset is read in place).
func (f *cacheFlags) cacheAhead() int {
	if f.c == nil {
		return 0
	}
	return f.ahead
}

// stats is what the cache did in this command, nil without a cache.
func (f *cacheFlags) stats() *cache.Stats {
	if f.c == nil {
		return nil
	}
	s := f.c.Stats()
	return &s
}

// loadCacheJSON and stageCacheJSON are the --json results of load and stage, with
// what the cache did.
type loadCacheJSON struct {
	*loader.Result
	Cache *cache.Stats `json:"cache,omitempty"`
}

type stageCacheJSON struct {
	*stage.Result
	Cache *cache.Stats `json:"cache,omitempty"`
}

func newCacheCmd() *cobra.Command {
	var flags cacheFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "list, verify, prune or clear a node-local cache folder",
		Long: `Cache manages the folder that --cache (or $` + cacheEnv + `) names, in which
load, stage and iterate keep verified copies of s3:// and rdmafs:// files
(docs/S3.md, the cache). Entries that a process holds open are never removed.`,
	}
	open := func() (*cache.Cache, error) {
		c, err := flags.open()
		if err == nil && c == nil {
			err = usagef("no cache folder: give --cache DIR or set $%s", cacheEnv)
		}
		return c, err
	}
	cmd.PersistentFlags().StringVar(&flags.dir, "cache", "", "the cache folder (default: $"+cacheEnv+")")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the result as JSON on stdout")

	ls := &cobra.Command{
		Use: "ls", Short: "list the entries, their sizes and the hit rate", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			ents, err := c.Entries()
			if err != nil {
				return err
			}
			tot, err := c.Totals()
			if err != nil {
				return err
			}
			return printCacheList(cmd.OutOrStdout(), c, ents, tot, asJSON)
		},
	}
	verify := &cobra.Command{
		Use: "verify", Short: "re-hash every entry; remove and list the damaged ones (exit 1 if any)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			checked, bad, err := c.Verify(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), struct {
					Checked int             `json:"checked"`
					Damaged []cache.Problem `json:"damaged"`
				}{checked, bad}); err != nil {
					return err
				}
			} else {
				for _, p := range bad {
					fmt.Fprintf(cmd.OutOrStdout(), "damaged  %s (%s): %s; removed %t\n", p.URL, p.Identity, p.Err, p.Removed)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "verified %s, %d damaged\n", humanize.Count(checked, "file"), len(bad))
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d damaged cache entries in %s", len(bad), c.Dir())
			}
			return nil
		},
	}
	var to string
	prune := &cobra.Command{
		Use: "prune --to SIZE", Short: "evict least recently used entries until the folder holds at most SIZE", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := humanize.ParseBytes(to)
			if to == "" || err != nil {
				return usagef("--to %q: want a size such as 100GiB", to)
			}
			c, err := open()
			if err != nil {
				return err
			}
			res, err := c.Prune(cmd.Context(), n)
			if err != nil {
				return err
			}
			return printPrune(cmd.OutOrStdout(), res, asJSON)
		},
	}
	prune.Flags().StringVar(&to, "to", "", "size to shrink the folder to")
	clear := &cobra.Command{
		Use: "clear", Short: "remove every entry no process holds", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			res, err := c.Clear(cmd.Context())
			if err != nil {
				return err
			}
			return printPrune(cmd.OutOrStdout(), res, asJSON)
		},
	}
	cmd.AddCommand(ls, verify, prune, clear)
	return cmd
}

func printCacheList(w io.Writer, c *cache.Cache, ents []cache.Entry, tot cache.Totals, asJSON bool) error {
	var held int64
	for _, e := range ents {
		held += e.Size
	}
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			Dir     string        `json:"dir"`
			Entries []cache.Entry `json:"entries"`
			Bytes   int64         `json:"bytes"`
			Totals  cache.Totals  `json:"totals"`
			HitRate float64       `json:"hit_rate"`
		}{c.Dir(), ents, held, tot, tot.HitRate()})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range ents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", humanize.Bytes(e.Size), e.LastUse.Format("2006-01-02 15:04:05"), e.Verified, e.URL)
	}
	fmt.Fprintf(tw, "total\t%s in %s\n", humanize.Bytes(held), humanize.Count(len(ents), "file"))
	fmt.Fprintf(tw, "hit rate\t%.1f%% (%d hits, %d misses, %d uncached)\n", 100*tot.HitRate(), tot.Hits, tot.Misses, tot.Bypassed)
	return tw.Flush()
}

func printPrune(w io.Writer, res cache.PruneResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err := fmt.Fprintf(w, "removed %s (%s); %d in use kept; %s held\n", humanize.Count(res.Evicted, "file"), humanize.Bytes(res.Freed), res.InUse, humanize.Bytes(res.Held))
	return err
}

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/spf13/cobra"
)

type iterateOptions struct {
	direct          string
	rank, worldSize int
	partitions      int
	seed            uint64
	shuffle         bool
	shuffleBuffer   string
	epochs          int64
	dropRemainder   bool
	workers         int
	prefetch        int
	verify          bool
	stateOut        string
	resume          string
	limit           int64
	asJSON          bool
	skipBad         bool
	checksum        string
	remote          remoteFlags
}

func newIterateCmd() *cobra.Command {
	o := &iterateOptions{}
	cmd := &cobra.Command{
		Use:   "iterate [flags] SOURCE",
		Short: "Iterate a WebDataset deterministically, as one rank of a job, and report throughput",
		Long: `Iterate reads a WebDataset (a directory with or without index.json, a
manifest file, a brace pattern such as 'shards/train-{000000..000099}.tar', or
one shard) the way a training job's rank would: deterministic order from
--seed and the epoch, split between --world-size ranks (defaults from RANK and
WORLD_SIZE), equal sample counts on every rank, resumable with --resume from a
state written by --state-out, also at another world size. A resumed run keeps
the order it started with: --seed, --partitions, --shuffle, --shuffle-buffer or
--drop-remainder given with values other than the state's are refused (exit
2), as is a state at the end of the run (raise --epochs to go on); the
directory of --state-out is checked before any shard is read. Without
index.json a local dataset is scanned to count its samples once: the counts
stay in the scan cache (GDSLOAD_SCAN_CACHE, by default ~/.cache/gdsload/scan;
off: none) as long as the shards do not change.

SOURCE may also be rdmafs://HOST:PORT/PATH on a 'gdsload serve' server, with
PATH any of the above relative to its export root ('rdmafs://HOST:PORT/' for
the root itself); authenticate with --token-file or GDSLOAD_TOKEN. Without a
manifest every shard is read once over the network to count its samples:
run 'gdsload manifest' on the server to skip that. SOURCE may as well be
s3://BUCKET/PREFIX/ (or a manifest, a brace pattern or one shard there) in an
S3-compatible object store: credentials, region and endpoint come from the
AWS environment (AWS_PROFILE, AWS_ACCESS_KEY_ID, AWS_REGION,
AWS_ENDPOINT_URL_S3; see docs/S3.md). Throughput goes to stderr; --json
prints one line per sample ("key", "shard") and a final summary line on
stdout.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runIterate(cmd, o, a[0])
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.rank, "rank", 0, "this process's rank (default $RANK or 0)")
	f.IntVar(&o.worldSize, "world-size", 0, "number of ranks (default $WORLD_SIZE or 1)")
	f.IntVar(&o.partitions, "partitions", 0, "canonical partitions fixed for the run (default: the world size)")
	f.Uint64Var(&o.seed, "seed", 0, "shuffle seed")
	f.BoolVar(&o.shuffle, "shuffle", true, "permute shards each epoch and shuffle samples within --shuffle-buffer")
	f.StringVar(&o.shuffleBuffer, "shuffle-buffer", "0", "sample shuffle window per partition, in bytes (e.g. 256MiB; 0: shard order)")
	f.Int64Var(&o.epochs, "epochs", 1, "epochs to run (a resumed run continues up to this many)")
	f.BoolVar(&o.dropRemainder, "drop-remainder", false, "drop the samples that do not split evenly instead of padding ranks by wrapping around")
	f.IntVar(&o.workers, "workers", 1, "shards decoded in parallel")
	f.StringVar(&o.direct, "direct", "auto", "O_DIRECT for local shards: auto (bypass the page cache where possible), on, or off (keep shards cached for the next epoch)")
	f.IntVar(&o.prefetch, "prefetch", 0, "shards read ahead (default 2 x workers)")
	f.BoolVar(&o.verify, "verify", true, "check each shard's digest against the manifest: its CRC-32C, or its SHA-256 where the manifest has no CRC-32C (sizes are always checked; --verify=false skips the digest)")
	f.StringVar(&o.stateOut, "state-out", "", "write the iterator state (JSON) here when stopping")
	f.StringVar(&o.resume, "resume", "", "resume from a state file written by --state-out")
	f.Int64Var(&o.limit, "limit", 0, "stop after this many samples (0: no limit)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON line per sample and a summary line on stdout")
	f.StringVar(&o.checksum, "checksum", "", "sha256: print the SHA-256 of the samples' field bytes, in the order yielded (to check a run against another reader)")
	f.BoolVar(&o.skipBad, "skip-bad-shards", false, "warn about shards that cannot be read and go on without them (WebDataset's warn_and_continue); ranks may then yield unequal sample counts")
	o.remote.addFlags(f)
	o.remote.cache.addFlags(f) // --cache, --cache-limit
	o.remote.cache.addAheadFlag(f)
	return cmd
}

func runIterate(cmd *cobra.Command, o *iterateOptions, source string) (err error) {
	ctx := cmd.Context()
	window, err := humanize.ParseBytes(o.shuffleBuffer)
	if err != nil {
		return usagef("--shuffle-buffer: %v", err)
	}
	if o.limit < 0 || o.epochs < 1 {
		return usagef("--epochs must be at least 1; --limit not negative")
	}
	if err := errors.Join(intFlagIn("--partitions", o.partitions, 0, iterator.MaxPartitions), intFlagIn("--workers", o.workers, 1, loader.MaxWorkers),
		intFlagIn("--prefetch", o.prefetch, 0, maxPrefetch)); err != nil {
		return err
	}
	place, err := iterator.FromEnv()
	if err != nil {
		return usageError{err}
	}
	if cmd.Flags().Changed("rank") {
		place.Rank = o.rank
	}
	if cmd.Flags().Changed("world-size") {
		place.WorldSize = o.worldSize
	}
	if err := place.Validate(); err != nil {
		return usageError{err}
	}
	direct, err := loader.ParseDirectMode(o.direct)
	if err != nil {
		return usageError{err}
	}
	opts := iterator.Options{
		Rank: place.Rank, WorldSize: place.WorldSize, Partitions: o.partitions,
		Seed: o.seed, Shuffle: o.shuffle, ShuffleBytes: window, Epochs: o.epochs,
		DropRemainder: o.dropRemainder, Workers: o.workers, Prefetch: o.prefetch, SkipChecksum: !o.verify,
		Direct: direct,
	}
	// Both files are checked before any shard is read: a state that
	// cannot be saved, or a resume that cannot yield what was asked, is
	// found now rather than at the end of the run.
	if o.stateOut != "" {
		if err := iterator.CheckStateFile(o.stateOut); err != nil {
			if errors.Is(err, iterator.ErrStateURL) {
				return usagef("--state-out: %w", err)
			}
			return fmt.Errorf("--state-out: %w", err)
		}
	}
	var resume *iterator.State
	if o.resume != "" {
		st, err := iterator.ReadStateFile(o.resume)
		if errors.Is(err, iterator.ErrStateURL) {
			return usagef("--resume: %w", err)
		}
		if err != nil {
			return err
		}
		if err := checkResume(cmd, o.resume, st, opts); err != nil {
			return err
		}
		resume = &st
	}
	log := logger(cmd)
	m, err := o.remote.mux(log, source)
	if err != nil {
		return err
	}
	opts.CacheAhead = o.remote.cache.cacheAhead()
	var onShardError webdataset.ShardErrorHandler
	if o.skipBad {
		onShardError = webdataset.WarnAndContinue(cmd.ErrOrStderr())
		opts.OnShardError = onShardError
	}
	defer m.Close()
	ds, err := iterator.Open(ctx, source, iterator.WithFS(m), iterator.WithScanWorkers(min(max(o.remote.connections, 1), iterator.MaxScanWorkers)),
		iterator.WithReaderOptions(webdataset.WithShardErrorHandler(onShardError)), iterator.WithScanCache(iterator.DefaultScanCacheDir()))
	if err != nil {
		return fmt.Errorf("opening dataset %s: %w", source, err)
	}
	log.Debug("dataset", "source", source, "shards", len(ds.Shards), "samples", ds.Samples())
	if err := o.remote.cache.checkShards(ds); err != nil {
		return err
	}
	for _, w := range ds.Warnings() {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	it, err := iterator.New(ds, opts)
	if errors.Is(err, iterator.ErrImpossibleShard) {
		return err // the data, not the command line
	}
	if err != nil {
		return usageError{err}
	}
	defer it.Close()
	if resume != nil {
		if err := it.Restore(*resume); err != nil {
			return fmt.Errorf("resuming from %s: %w", o.resume, err)
		}
	}
	var digest hash.Hash
	switch o.checksum {
	case "":
	case "sha256":
		digest = sha256.New()
	default:
		return usagef("--checksum %q: want sha256", o.checksum)
	}
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
	// Every way out flushes the lines written so far, each one whole.
	defer func() {
		if ferr := out.Flush(); ferr != nil && !errors.Is(err, ferr) {
			err = errors.Join(err, fmt.Errorf("writing output: %w", ferr))
		}
	}()
	var line []byte // a sample's --json line, reused
	var samples, bytes int64
	start := time.Now()
	var iterErr error
	for o.limit == 0 || samples < o.limit {
		s, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			iterErr = fmt.Errorf("iterating %s: %w", source, err)
			break
		}
		n := s.Bytes()
		if digest != nil {
			for _, f := range s.Fields {
				digest.Write(f.Data)
			}
		}
		samples++
		bytes += n
		if o.asJSON {
			line = sampleLine{Key: s.Key, Shard: s.Shard, Epoch: s.Epoch, Position: s.Position, Padding: s.Padding, Bytes: n}.appendJSON(line[:0])
			if _, err := out.Write(line); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
		}
	}
	sum := newSummary(samples, bytes, time.Since(start))
	sum.Rank, sum.WorldSize, sum.State = place.Rank, place.WorldSize, it.State()
	sum.Cache = o.remote.cache.stats()
	if digest != nil {
		sum.SHA256 = hex.EncodeToString(digest.Sum(nil))
	}
	// The state is exact even after an error or interruption: save it.
	if o.stateOut != "" {
		if err := iterator.WriteStateFile(context.WithoutCancel(ctx), o.stateOut, sum.State); err != nil {
			return errors.Join(iterErr, err)
		}
	}
	fmt.Fprintln(infoOut(cmd), sum)
	if o.asJSON && iterErr == nil {
		if err := json.NewEncoder(out).Encode(sum); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	return iterErr
}

// resumeFlags name the flags of the options a state fixes.
var resumeFlags = map[string]string{"Seed": "seed", "Partitions": "partitions", "Shuffle": "shuffle", "ShuffleBytes": "shuffle-buffer", "DropRemainder": "drop-remainder"}

// checkResume refuses, as usage errors, a state at the end of the run
// (it would yield nothing) and flags that contradict the order the state
// fixes; options not given take the state's values, as -v says.
func checkResume(cmd *cobra.Command, path string, st iterator.State, opts iterator.Options) error {
	mismatches, err := iterator.CheckResume(st, opts)
	if err != nil {
		return usagef("--resume %s: %w: raise --epochs above %d", path, err, st.Epoch)
	}
	var given []string
	for _, m := range mismatches {
		flag := resumeFlags[m.Option]
		if cmd.Flags().Changed(flag) {
			given = append(given, fmt.Sprintf("--%s %s differs from the state's %s", flag, m.Options, m.State))
		} else {
			logger(cmd).Debug("resuming in the state's order", "flag", "--"+flag, "state", m.State, "default", m.Options)
		}
	}
	if len(given) > 0 {
		return usagef("--resume %s: %s; a resumed run keeps the order it started with: drop the flag, or start afresh without --resume", path, strings.Join(given, "; "))
	}
	return nil
}

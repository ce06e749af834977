package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/gdsload/gdsload/internal/humanize"
	"github.com/gdsload/gdsload/internal/progress"
	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
	"github.com/gdsload/gdsload/stage"
	"github.com/gdsload/gdsload/vfs"
	"github.com/spf13/cobra"
)

type manifestOptions struct {
	verify bool
	asJSON bool
}

func newManifestCmd() *cobra.Command {
	o := &manifestOptions{}
	cmd := &cobra.Command{
		Use:   "manifest [flags] DIR",
		Short: "Write (or verify) index.json for the WebDataset shards in a directory",
		Long: `Manifest scans every shard in DIR and its subfolders (` + webdataset.ShardPatterns + `;
folders whose names begin with a dot are left out, and .tar.xz shards are
refused by name), counts its samples, hashes it, and writes DIR/index.json atomically. With --verify it
instead checks every shard listed in an existing index.json for size and
SHA-256, names the shards that differ, and names the shards in DIR that the
index does not list; DIR may then be a URL
(s3://BUCKET/PREFIX/, rdmafs://HOST:PORT/PATH), whose shards are read where
they are.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runManifest(cmd, o, a[0])
		},
	}
	cmd.Flags().BoolVar(&o.verify, "verify", false, "verify the shards against the existing index.json instead of writing it")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the manifest as JSON on stdout")
	return cmd
}

func runManifest(cmd *cobra.Command, o *manifestOptions, dir string) error {
	ctx := cmd.Context()
	var m *webdataset.Manifest
	switch {
	case o.verify: // a local directory or a URL
		mux, err := vfs.New()
		if err != nil {
			return err
		}
		defer mux.Close()
		if m, err = stage.ReadManifest(ctx, mux, dir); err != nil {
			return err
		}
		bar := progress.Start(infoOut(cmd), "verify", m.Bytes())
		err = stage.VerifyShards(ctx, mux, dir, m, bar.Add)
		bar.Stop()
		// Shards in the folder that the manifest leaves out are reported
		// with those that differ.
		if ctx.Err() == nil {
			found, lerr := iterator.ShardFilesAt(ctx, mux, dir)
			if lerr == nil {
				lerr = webdataset.CheckListed(dir, found, m)
			}
			err = errors.Join(err, lerr)
		}
		if err != nil {
			return err
		}
	case vfs.IsURL(dir):
		return usagef("manifest writes index.json into a local directory; for %s, run it on a local copy and upload index.json, or check the manifest there with --verify", dir)
	default:
		names, total, err := webdataset.ShardFiles(dir)
		if err != nil {
			return err
		}
		// BuildManifest's own steps, on the listing already made for the
		// progress total.
		bar := progress.Start(infoOut(cmd), "manifest", total)
		m, err = webdataset.BuildManifestFrom(ctx, names, runtime.GOMAXPROCS(0), func(ctx context.Context, name string) (webdataset.ShardEntry, error) {
			return webdataset.ScanShard(ctx, filepath.Join(dir, name), webdataset.WithProgress(bar.Add))
		})
		bar.Stop()
		if err != nil {
			return fmt.Errorf("building manifest for %s: %w", dir, err)
		}
		if len(m.Shards) == 0 {
			return fmt.Errorf("no shards (%s) in %s", webdataset.ShardPatterns, dir)
		}
		if err := webdataset.WriteManifest(ctx, dir, m); err != nil {
			return err
		}
	}
	for _, w := range m.Warnings() {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	samples, bytes := m.Samples(), m.Bytes() // a sample split across shards counts once
	verb := "wrote"
	if o.verify {
		verb = "verified"
	}
	fmt.Fprintf(infoOut(cmd), "manifest: %s %s: %s, %s, %s\n", verb, vfs.Join(dir, webdataset.ManifestName), humanize.Count(len(m.Shards), "shard"), humanize.Count(samples, "sample"), humanize.Bytes(bytes))
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), m)
	}
	return nil
}

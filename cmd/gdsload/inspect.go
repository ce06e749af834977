package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/gdsload/gdsload/shards/inspect"
)

type inspectOptions struct {
	asJSON bool
	remote remoteFlags
}

func newInspectCmd() *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect [flags] FILE|DIR",
		Short: "Validate a checkpoint or dataset shard and describe what it holds",
		Long: `Inspect validates a file's headers as strictly as a load would and describes
it, reading only what it must:

  .safetensors              tensors (name, dtype, shape, bytes) and metadata
  .npy                      dtype, shape, order and data size
  *.safetensors.index.json  shards, tensors per shard and total bytes; every
                            shard's header is read and checked against the
                            index's weight_map
  .tar .tar.gz .tgz .tar.zst .tar.zstd .tzst
                            WebDataset shard: samples, extensions and how many
                            samples carry each, total and min/max sample bytes
                            (the whole shard is read and decompressed)

A DIR is taken as a load takes it: the one *.safetensors.index.json it
holds or, without one, its only .safetensors file. FILE may be an
rdmafs://host:port/path or s3://bucket/key URL. An invalid file exits with status
1 and says what is wrong and where.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			m, err := o.remote.mux(logger(cmd), a[0])
			if err != nil {
				return err
			}
			defer m.Close()
			rep, err := inspect.File(cmd.Context(), a[0], inspect.Options{FS: m})
			if err != nil {
				return err
			}
			if o.asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), rep.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the description as JSON on stdout")
	o.remote.addFlags(cmd.Flags())
	return cmd
}

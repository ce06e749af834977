"""The MosaicML Streaming side of scripts/bench-s3-cache.sh, run in the
script's own venv (mosaicml-streaming).

Modes:
  reference TAR_DIR OUT   writes "key sha256" of every sample (the .bin field)
                          of the .tar shards in TAR_DIR, sorted by key
  mds TAR_DIR MDS_DIR     converts the same shards, in order, into MDS with
                          streaming.MDSWriter (columns key: str, bin: bytes,
                          no compression, shards of about the tar shards' size)
  read REMOTE LOCAL EPOCHS OUT
                          one rank (RANK, WORLD_SIZE, LOCAL_RANK,
                          LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the
                          environment): EPOCHS passes over
                          StreamingDataset(remote=REMOTE, local=LOCAL,
                          shuffle=False), writing "epoch key sha256" per sample;
                          OUT.ready gets the time (ns since the epoch) at
                          which its imports were done and the dataset was
                          about to be made
  check REFERENCE EPOCHS OUT...
                          every epoch of the ranks' OUT files together holds
                          each sample of REFERENCE exactly once, with its bytes
"""

import hashlib
import os
import sys
import tarfile


def samples(tar_dir):
    for name in sorted(os.listdir(tar_dir)):
        if not name.endswith(".tar"):
            continue
        with tarfile.open(os.path.join(tar_dir, name)) as tf:
            for m in tf:
                if m.isfile():
                    key, _, ext = m.name.partition(".")
                    yield key, ext, tf.extractfile(m).read()


def main():
    mode = sys.argv[1]
    if mode == "reference":
        rows = sorted(f"{k} {hashlib.sha256(b).hexdigest()}\n" for k, _, b in samples(sys.argv[2]))
        with open(sys.argv[3], "w") as f:
            f.writelines(rows)
    elif mode == "mds":
        from streaming import MDSWriter

        tar_dir, out = sys.argv[2], sys.argv[3]
        tars = [n for n in os.listdir(tar_dir) if n.endswith(".tar")]
        limit = max(os.path.getsize(os.path.join(tar_dir, n)) for n in tars)
        with MDSWriter(out=out, columns={"key": "str", "bin": "bytes"}, size_limit=limit) as w:
            for k, _, b in samples(tar_dir):
                w.write({"key": k, "bin": b})
    elif mode == "read":
        import time

        from streaming import StreamingDataset

        remote, local, epochs, out = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        with open(out + ".ready", "w") as f:
            f.write(f"{time.time_ns()}\n")
        ds = StreamingDataset(remote=remote, local=local, shuffle=False, batch_size=1, download_timeout=600)
        with open(out, "w") as f:
            for e in range(epochs):
                for s in ds:
                    f.write(f"{e} {s['key']} {hashlib.sha256(s['bin']).hexdigest()}\n")
    elif mode == "check":
        with open(sys.argv[2]) as f:
            want = sorted(f.read().splitlines())
        epochs = int(sys.argv[3])
        got = {e: [] for e in range(epochs)}
        for path in sys.argv[4:]:
            with open(path) as f:
                for line in f:
                    e, rest = line.rstrip("\n").split(" ", 1)
                    got.setdefault(int(e), []).append(rest)
        for e in sorted(got):
            rows = sorted(got[e])
            if rows != want:
                missing = len(set(want) - set(rows))
                sys.exit(f"streaming epoch {e}: {len(rows)} samples yielded, {len(want)} expected, {missing} of the source's (key, sha256) pairs missing")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()

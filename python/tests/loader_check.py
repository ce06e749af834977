"""Run by test_dataset in a fresh interpreter (so gdsload's runtime does not
start in the parent before the DataLoader forks): iterates ShardDatasets
through DataLoaders and prints what each yielded as JSON."""

import json
import sys

import torch
from torch.utils.data import DataLoader

import gdsload


def check_sample(s, errors):
    """The decoded fields agree with the key (see helpers.write_shards)."""
    shard, idx = s["__key__"][1:].split("-")
    shard, idx = int(shard), int(idx)
    if s["txt"] != s["__key__"].encode():
        errors.append(f"{s['__key__']}: txt {s['txt']!r}")
    if s["cls"] != idx:
        errors.append(f"{s['__key__']}: cls {s['cls']!r}")
    if not torch.equal(s["npy"], torch.tensor([shard, idx, shard * 1000 + idx], dtype=torch.int32)):
        errors.append(f"{s['__key__']}: npy {s['npy']!r}")


def keys_of(loader, errors):
    out = []
    for batch in loader:
        if isinstance(batch["__key__"], str):  # batch_size=None: one sample
            batch = {k: [v] for k, v in batch.items()}
        for i, key in enumerate(batch["__key__"]):
            check_sample({k: v[i] for k, v in batch.items()}, errors)
            out.append(key)
    return out


def split(root):
    """Each (context, workers, world, rank): the keys of one epoch."""
    res, errors = {}, []
    for ctx, workers in (("fork", 2), ("spawn", 2), (None, 0)):  # no workers last: it starts gdsload here
        for world in (1, 2):
            for rank in range(world):
                ds = gdsload.ShardDataset(root, seed=3, shuffle_buffer="2KiB", rank=rank, world_size=world)
                dl = DataLoader(ds, batch_size=4, num_workers=workers, multiprocessing_context=ctx)
                res[f"{ctx}-{workers}-{world}-{rank}"] = keys_of(dl, errors)
    # batch_size=None (samples one by one), through RANK/WORLD_SIZE.
    import os

    os.environ.update(RANK="1", WORLD_SIZE="2")
    ds = gdsload.ShardDataset(root, seed=3, shuffle_buffer="2KiB", epochs=2)
    res["env-none-2-1"] = keys_of(DataLoader(ds, batch_size=None), errors)
    return {"keys": res, "errors": errors}


def resume(root, workers, batch, stop):
    """An uninterrupted run of two epochs, and one stopped after `stop`
    batches and resumed from its state_dict in new objects; without
    workers, also the dataset alone stopped after `stop` samples."""
    ctx = "fork" if workers else None
    errors = []

    def make():
        ds = gdsload.ShardDataset(root, seed=7, shuffle_buffer="2KiB", epochs=2)
        return gdsload.ShardLoader(ds, batch_size=batch, num_workers=workers, multiprocessing_context=ctx)

    whole = keys_of(make(), errors)
    first = make()
    part = []
    for i, b in enumerate(first):
        part.extend(b["__key__"])
        if i + 1 == stop:
            break
    state = first.state_dict()
    del first
    second = make()
    second.load_state_dict(json.loads(json.dumps(state)))  # plain values: survives JSON
    rest = keys_of(second, errors)
    if workers:  # what follows starts gdsload here: later forks would be refused
        return {"whole": whole, "resumed": part + rest, "state": state, "alone": None, "errors": errors}
    # The dataset alone (no DataLoader), stopped mid-way.
    ds = gdsload.ShardDataset(root, seed=7, shuffle_buffer="2KiB", epochs=2)
    it = iter(ds)
    alone = [next(it)["__key__"] for _ in range(stop)]
    st = ds.state_dict()
    del it
    ds2 = gdsload.ShardDataset(root, seed=7, shuffle_buffer="2KiB", epochs=2)
    ds2.load_state_dict(st)
    alone += [s["__key__"] for s in ds2]
    return {"whole": whole, "resumed": part + rest, "state": state, "alone": alone, "errors": errors}


def started(root, path):
    """A parent that started gdsload: forked workers are refused with advice;
    forkserver workers work."""
    gdsload.load_file(path)
    res = {}
    ds = gdsload.ShardDataset(root)
    try:
        list(DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork"))
        res["fork"] = "worked"
    except Exception as e:  # DataLoader re-raises the worker's error
        res["fork"] = str(e)
    errors = []
    res["forkserver"] = keys_of(DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="forkserver"), errors)
    res["errors"] = errors
    return res


def passes(root, subset):
    """Resumed loaders and datasets, then iterated twice more: each pass
    after the resumed one is the next epoch. And states refused by a loader
    over another dataset (subset holds some of root's shards) or seed."""
    errors, res = [], {}

    def loader(workers, seed=7, source=root, epoch=None):
        ds = gdsload.ShardDataset(source, seed=seed, shuffle_buffer="2KiB")
        if epoch is not None:
            ds.set_epoch(epoch)
        return gdsload.ShardLoader(ds, batch_size=3, num_workers=workers,
                                   multiprocessing_context="fork" if workers else None)

    for workers in (2, 0):  # forking workers before gdsload starts here
        w = f"w{workers}"
        res[w + "-epoch0"] = keys_of(loader(workers), errors)
        res[w + "-epoch1"] = keys_of(loader(workers, epoch=1), errors)
        res[w + "-epoch2"] = keys_of(loader(workers, epoch=2), errors)
        first = loader(workers)
        part = []
        for i, b in enumerate(first):
            part.extend(b["__key__"])
            if i + 1 == 2:
                break
        state = json.loads(json.dumps(first.state_dict()))
        res[w + "-state"] = state
        res[w + "-part"] = part
        second = loader(workers)
        second.load_state_dict(state)
        res[w + "-passes"] = [keys_of(second, errors) for _ in range(3)]
        for name, make in (("subset", lambda: loader(workers, source=subset)), ("seed8", lambda: loader(workers, seed=8))):
            try:
                other = make()
                other.load_state_dict(state)
                res[f"{w}-{name}"] = len(keys_of(other, errors))
            except ValueError as e:
                res[f"{w}-{name}"] = "ValueError: " + str(e)
    # The dataset alone, resumed and iterated again.
    ds = gdsload.ShardDataset(root, seed=7, shuffle_buffer="2KiB")
    it = iter(ds)
    res["alone-part"] = [next(it)["__key__"] for _ in range(5)]
    st = ds.state_dict()
    del it
    ds2 = gdsload.ShardDataset(root, seed=7, shuffle_buffer="2KiB")
    ds2.load_state_dict(st)
    res["alone-passes"] = [[s["__key__"] for s in ds2] for _ in range(3)]
    res["errors"] = errors
    return res


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "split":
        out = split(*args)
    elif mode == "passes":
        out = passes(*args)
    elif mode == "resume":  # root, then workers,batch,stop triples
        out = [resume(args[0], *map(int, case.split(","))) for case in args[1:]]
    else:
        out = started(*args)
    print(json.dumps(out))

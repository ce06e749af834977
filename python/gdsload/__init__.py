"""gdsload for Python: checkpoints and dataset shards loaded by gdsload's
engine (O_DIRECT, parallel reads, cuFile to the GPU) and handed to PyTorch
or numpy without a copy, through DLPack.

    import gdsload
    tensors = gdsload.load_file("model.safetensors", device="cuda:0")

load_file, save_file, safe_open, load and save are drop-ins for
safetensors.torch's (SafetensorError included);
ShardDataset is a torch IterableDataset over WebDataset shards. The package
is pure Python over ctypes; the engine is libgdsload.so (capi/), loaded on
first use in each process (see ForkError for DataLoader workers).
"""

from ._checkpoint import LoadStats, last_stats, load, load_file, safe_open, save, save_file
from ._native import ForkError, SafetensorError, build_info, live_allocations
from .dataset import DecodeError, ShardDataset, ShardLoader, ignore_and_continue, reraise_exception, warn_and_continue

__all__ = [
    "DecodeError", "ForkError", "LoadStats", "ShardDataset", "ShardLoader", "build_info", "ignore_and_continue",
    "SafetensorError", "last_stats", "live_allocations", "load", "load_file", "reraise_exception", "safe_open", "save",
    "save_file", "warn_and_continue",
]

__version__ = "0.1.0"

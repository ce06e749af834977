"""gdsload for Python: checkpoints and dataset shards loaded by gdsload's
engine (O_DIRECT, parallel reads, cuFile to the GPU) and handed to PyTorch
or numpy without a copy, through DLPack.

    import gdsload
    tensors = gdsload.load_file("model.safetensors", device="cuda:0")

load_file, save_file and safe_open are drop-ins for safetensors.torch's;
ShardDataset is a torch IterableDataset over WebDataset shards. The package
is pure Python over ctypes; the engine is libgdsload.so (capi/), loaded on
first use in each process (see ForkError for DataLoader workers).
"""

from ._checkpoint import LoadStats, last_stats, load_file, safe_open, save_file
from ._native import ForkError, build_info, live_allocations
from .dataset import ShardDataset, ShardLoader

__all__ = [
    "ForkError", "LoadStats", "ShardDataset", "ShardLoader", "build_info", "last_stats", "live_allocations",
    "load_file", "safe_open", "save_file",
]

__version__ = "0.1.0"

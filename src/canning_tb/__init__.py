"""canning-tb: profiling for PyTorch on Ascend NPUs, GPUs and CPUs (see DESIGN in README)."""
__version__ = "0.1.0"

"""canning: profiling for PyTorch. Use `from canning import profiling_suite as ps`; importing this never imports torch."""
__all__ = ["profiling_suite"]

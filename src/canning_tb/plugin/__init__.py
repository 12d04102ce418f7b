"""TensorBoard plugin of canning-tb: routes only; the entry point is loader.CanningLoader."""

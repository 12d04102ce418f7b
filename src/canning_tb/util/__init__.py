"""What every part may use and that imports nothing else of canning_tb: columns (arrays), the one LRU,
safe opening of a user's files, remote file systems, the window manifest, the process identity, the
logdir's normalisation, TensorBoard scalars, digests as plain JSON and CSV cells."""

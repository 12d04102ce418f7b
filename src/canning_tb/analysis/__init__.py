"""Pure functions: EventTable -> Digest. Knows nothing of TensorBoard, HTTP or torch."""

"""The embedding models (first stage and reader), their ONNX exports and the vector caches that spare re-embedding."""

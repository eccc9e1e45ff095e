"""The engine: evaluate manifests against sources, write results, keep records."""

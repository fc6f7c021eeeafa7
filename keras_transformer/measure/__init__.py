"""Measurement behind `keras-transformer benchmark` (`harness`) and `compare` (`report`).

Only those commands and `benchmarks/` import it; `import keras_transformer` never does.
"""

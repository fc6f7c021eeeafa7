"""Measurement behind `keras-transformer benchmark` and `keras-transformer compare`.

Only those two commands and the scripts in `benchmarks/` import this
subpackage; `import keras_transformer` and the library's own code never do.
`harness` times training steps against peer implementations and decoding;
`report` runs the Transformer-versus-RNN comparison and writes its report.
"""

"""Analytic and measured complexity of Transformers and RNNs (`plots`: the figures)."""

# isort: off
from keras_transformer.analysis.complexity import (
    LAYER_KINDS,
    apply_layer,
    complexity_table,
    layer_flops,
    layer_parameters,
    maximum_path_length,
    operations_crossover,
    reference_layer,
    sequential_steps,
    table_operations,
)
from keras_transformer.analysis.gradients import (
    decay_ratio,
    gradient_curves,
    gradient_model,
    gradient_norms,
)
from keras_transformer.analysis.long_range import (
    LONG_RANGE_MODELS,
    RecallData,
    build_recall_model,
    long_range_experiment,
    recall_accuracy,
    recall_data,
    width_for_parameters,
)
from keras_transformer.analysis.operations import (
    count_flops,
    count_recurrent_steps,
    critical_path,
    growth_exponent,
    measure_layer,
    measure_operations,
    op_flops,
    trace_graph,
)
from keras_transformer.models.parameters import (
    attention_parameters,
    decoder_layer_parameters,
    encoder_layer_parameters,
    feed_forward_parameters,
    transformer_parameters,
)
from keras_transformer.analysis.timing import (
    first_length_slower,
    fit_time_curve,
    time_step,
    timing_sweep,
)

__all__ = [
    "attention_parameters",
    "decoder_layer_parameters",
    "encoder_layer_parameters",
    "feed_forward_parameters",
    "transformer_parameters",
    "LAYER_KINDS",
    "apply_layer",
    "complexity_table",
    "layer_flops",
    "layer_parameters",
    "maximum_path_length",
    "operations_crossover",
    "reference_layer",
    "sequential_steps",
    "table_operations",
    "count_flops",
    "count_recurrent_steps",
    "critical_path",
    "growth_exponent",
    "measure_layer",
    "measure_operations",
    "op_flops",
    "trace_graph",
    "decay_ratio",
    "gradient_curves",
    "gradient_model",
    "gradient_norms",
    "first_length_slower",
    "fit_time_curve",
    "time_step",
    "timing_sweep",
    "LONG_RANGE_MODELS",
    "RecallData",
    "build_recall_model",
    "long_range_experiment",
    "recall_accuracy",
    "recall_data",
    "width_for_parameters",
    "plots",
]
# isort: on


def __getattr__(name: str):
    if name == "plots":  # matplotlib only when a figure is wanted
        import importlib

        return importlib.import_module("keras_transformer.plots")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

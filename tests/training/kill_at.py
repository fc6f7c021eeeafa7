"""`keras-transformer ARGS` with a fault injected, for the tests that stop a run and resume it.

`python tests/training/kill_at.py train ...` runs the command line as `keras-transformer` does;
when `$KERAS_TRANSFORMER_TEST_KILL_AT` names a point, the process signals itself there (SIGKILL,
or the signal `$KERAS_TRANSFORMER_TEST_KILL_SIGNAL` names: `INT`, `TERM`):

- `loading_data`: before the data is read (`run.load_data`);
- `building_model`: before the model is compiled (vocabularies written, no config.json);
- `mid_epoch:E`: after batch 1 of epoch E;
- `after_checkpoint:E`: after epoch E's best checkpoint, before its history row;
- `before_plots`: right after `model.keras` is written;
- `before_metrics`: before `metrics.json` is written (the plots are).

The package itself carries no hook: the points are wrapped here, around its functions.
"""

import functools
import os
import signal
import sys
import time

KILL_AT = "KERAS_TRANSFORMER_TEST_KILL_AT"
KILL_SIGNAL = "KERAS_TRANSFORMER_TEST_KILL_SIGNAL"


def _kill() -> None:
    number = getattr(signal, "SIG" + os.environ.get(KILL_SIGNAL, "KILL").upper())
    os.kill(os.getpid(), number)
    time.sleep(1)  # the Python handler of SIGINT / SIGTERM runs here


def _before(owner, name: str) -> None:
    """`owner.name` signals the process before it runs."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        _kill()
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def install(point: str) -> None:
    """Wraps the function at `point` (see the module docstring)."""
    import keras

    from keras_transformer.runs import RunDirectory
    from keras_transformer.training import callbacks, run

    where, _, epoch = point.partition(":")
    if where == "loading_data":
        _before(run, "load_data")
    elif where == "building_model":
        _before(run, "compile_model")
    elif where == "mid_epoch":

        def on_train_batch_end(self, batch, logs=None):
            if batch == 1 and self.epoch_now == int(epoch):
                _kill()

        def on_epoch_begin(self, number, logs=None):
            self.epoch_now = number

        callbacks.BestWeights.on_epoch_begin = on_epoch_begin
        callbacks.BestWeights.on_train_batch_end = on_train_batch_end
    elif where == "after_checkpoint":
        saved = callbacks.BestWeights.on_epoch_end

        def on_epoch_end(self, number, logs=None):
            saved(self, number, logs)
            if number == int(epoch):
                _kill()

        callbacks.BestWeights.on_epoch_end = on_epoch_end
    elif where == "before_plots":
        save = keras.Model.save

        def save_then_kill(self, path, *args, **kwargs):
            save(self, path, *args, **kwargs)
            if str(path).endswith("model.keras"):
                _kill()

        keras.Model.save = save_then_kill
    elif where == "before_metrics":
        write_json = RunDirectory.write_json

        def write_unless_metrics(self, name, *args, **kwargs):
            if name == "metrics.json":
                _kill()
            return write_json(self, name, *args, **kwargs)

        RunDirectory.write_json = write_unless_metrics
    else:
        raise ValueError(f"{KILL_AT}={point!r} names no point; see {__file__}")


if __name__ == "__main__":
    from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs

    if os.environ.get(KILL_AT):  # TensorFlow imported as quietly as the command line does
        quiet_native_logs(force=True)
        import_tensorflow_quietly()
        install(os.environ[KILL_AT])
    from keras_transformer.cli import main

    sys.exit(main())

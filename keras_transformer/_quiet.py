"""TensorFlow without its native start-up lines: the command line and the package share this.

TensorFlow 2.21 writes C++ log lines on stderr that need no action from a user: at import
("All log messages before absl::InitializeLog() ...", "oneDNN custom operations are on", "Could
not find cuda drivers", "failed call to cuInit") whatever `TF_CPP_MIN_LOG_LEVEL` says, and later,
at ERROR level, "oneDNN supports DT_INT64 only on platforms with AVX-512" on CPUs without
AVX-512 support for that type. `quiet_native_logs()` sets the level that hides the later ones
(before TensorFlow is imported: it reads it once), `import_tensorflow_quietly()` sends the import's
lines to a temporary file, shown only if the import fails.
"""

import contextlib
import logging
import os
import sys
import tempfile

QUIET_LEVEL = "3"
"""`TF_CPP_MIN_LOG_LEVEL` that hides TensorFlow's native INFO, WARNING and ERROR lines."""


def quiet_native_logs(*, force: bool = False) -> None:
    """Sets `TF_CPP_MIN_LOG_LEVEL` to `QUIET_LEVEL` before TensorFlow is imported: `force` (the
    command line without `-vv`) overrides a value the environment has, else only a missing one
    is set (a user's own setting wins in Python). A no-op once TensorFlow is imported."""
    if "tensorflow" in sys.modules:
        return
    if force:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = QUIET_LEVEL
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET_LEVEL)


def import_tensorflow_quietly() -> None:
    """Imports TensorFlow with stderr (fd 2) sent to a temporary file: CUDA's stubs and oneDNN
    write before TensorFlow's log level applies; the lines are shown if the import fails. If
    TensorFlow is already imported (a script that imported Keras first), only its first device
    probe ("failed call to cuInit") is kept off stderr: its import's lines were already written.
    `TF_CPP_MIN_LOG_LEVEL=0` in the environment shows every line."""
    if "tensorflow" in sys.modules:
        if not _probed:
            with native_lines_hidden():
                _probe_devices()
        return
    with native_lines_hidden():
        import tensorflow  # noqa: F401

        _probe_devices()
    quiet_python_loggers()


_probed = False


def _probe_devices() -> None:
    """Lists the GPUs once: on a machine without one, CUDA writes "failed call to cuInit"
    then, whatever the log level."""
    global _probed
    import tensorflow as tf

    _probed = True
    tf.config.list_physical_devices("GPU")


def quiet_python_loggers() -> None:
    """TensorFlow's and absl's Python loggers at ERROR."""
    import tensorflow as tf

    tf.get_logger().setLevel(logging.ERROR)
    with contextlib.suppress(ImportError):  # absl comes with TensorFlow
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)


@contextlib.contextmanager
def native_lines_hidden():
    """Sends stderr (fd 2) to a temporary file inside the block, shown only if the block fails
    (not for Ctrl-C). Does nothing where there is no real stderr, or where the environment
    asks for every native line (`TF_CPP_MIN_LOG_LEVEL=0`)."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (AttributeError, OSError, ValueError):  # no real stderr (embedded): nothing to hide
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except KeyboardInterrupt:
            raise  # Ctrl-C while TensorFlow loads: no log lines
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


ONE_TRACE_PER_INSTANCE = (
    "Translator._ranked_search",
    "WordPieceTokenizer.tokenize",
    "WordPieceTokenizer.detokenize",
    "WordPieceTokenizer.lookup",
)
"""Methods that are `tf.function`s traced by each instance on its first calls (one trace per
input layout): a process that makes many translators or tokenizers traces them again for each
one, as it must."""


class OneTracePerInstance(logging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning about the methods of
    `ONE_TRACE_PER_INSTANCE`. TensorFlow counts traces by the Python function, not by the
    instance, so the fifth translator or tokenizer of a process (a notebook that trains twice,
    a test session) is reported as retracing although none of them traced twice. Other
    functions' warnings pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "triggered tf.function retracing" not in message or not any(
            name in message for name in ONE_TRACE_PER_INSTANCE
        )


def drop_per_instance_retracing() -> None:
    """Adds `OneTracePerInstance` to TensorFlow's Python logger, once per process."""
    tf_logger = logging.getLogger("tensorflow")  # what tf.get_logger() returns
    if not any(isinstance(f, OneTracePerInstance) for f in tf_logger.filters):
        tf_logger.addFilter(OneTracePerInstance())

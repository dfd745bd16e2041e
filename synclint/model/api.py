"""What PyTorch calls mean for streams, events and memory: the tables the interpreter consults.

Names are canonical (see :func:`synclint.model.resolver.canonical`): ``torch.xpu.*`` and
``torch.accelerator.*`` arrive here as ``torch.cuda.*``. Methods are matched by name on values whose
kind the interpreter knows (a stream, an event, a tensor storage).
"""

from __future__ import annotations

STREAM_FACTORIES = {"torch.cuda.Stream", "torch.cuda.ExternalStream"}
EVENT_FACTORIES = {"torch.cuda.Event"}
#: ``torch.cuda.Stream.synchronize(s)``: the method called through the class, ``s.synchronize()``.
UNBOUND_STREAM_SYNCHRONIZE = "torch.cuda.Stream.synchronize"
CURRENT_STREAM = {"torch.cuda.current_stream"}
DEFAULT_STREAM = {"torch.cuda.default_stream"}
STREAM_CONTEXTS = {"torch.cuda.stream"}
SET_STREAM = {"torch.cuda.set_stream"}
DEVICE_SYNC = {"torch.cuda.synchronize"}
GRAPH_CONTEXTS = {"torch.cuda.graph"}
#: Graph objects that are their own capture context (``g = torch.accelerator.Graph()``, then
#: ``with g:``); entering one synchronizes the device first.
GRAPH_OBJECTS = {"torch.cuda.Graph"}
#: CUDA graphs captured with ``torch.cuda.graph(g)``: ``g.replay()`` launches the graph's kernels on
#: the current stream and returns at once.
CUDA_GRAPHS = {"torch.cuda.CUDAGraph"}
GRAPH_REPLAY = "torch.cuda.CUDAGraph.replay"
#: Stream/Event constructor keywords PyTorch accepts (SYN501 reports others).
STREAM_KEYWORDS = {"device", "priority", "stream_id", "device_index", "device_type", "stream_ptr"}
EVENT_KEYWORDS = {"enable_timing", "blocking", "interprocess", "external", "device"}

#: Wall clocks. Not ``time.process_time``/``thread_time``: they count the CPU time this process
#: spent, which no synchronization would turn into the GPU's time (``cpu_time = process_time() -
#: t0`` around asynchronous work measures the host on purpose).
HOST_CLOCKS = {
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "time.monotonic_ns",
    "timeit.default_timer",
}

#: ``wait_tensor(t)`` waits (on the current stream) for the collective writing ``t``: how
#: functional collectives are waited for, and non-functional ones under
#: ``allow_inflight_collective_as_graph_input_ctx()`` (elsewhere it finds no registered work and
#: does nothing: taken as a wait all the same, precision first).
WAIT_TENSOR = {
    "torch.ops.c10d_functional.wait_tensor",
    "torch.ops._c10d_functional.wait_tensor",
    "torch.distributed._functional_collectives.wait_tensor",
}

COLLECTIVES = {
    f"torch.distributed.{name}"
    for name in (
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "_all_gather_base",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "broadcast",
        "reduce",
        "all_to_all",
        "all_to_all_single",
        "send",
        "recv",
        "isend",
        "irecv",
        "gather",
        "scatter",
    )
}
#: Collectives that write their first positional argument, with that parameter's keyword (the
#: others read their inputs only). ``all_gather``'s ``tensor`` is its input: the keyword matters.
COLLECTIVE_OUTPUT = {
    "torch.distributed.all_reduce": "tensor",
    "torch.distributed.all_gather": "tensor_list",
    "torch.distributed.all_gather_into_tensor": "output_tensor",
    "torch.distributed._all_gather_base": "output_tensor",
    "torch.distributed.reduce_scatter": "output",
    "torch.distributed.reduce_scatter_tensor": "output",
    "torch.distributed._reduce_scatter_base": "output",
    "torch.distributed.broadcast": "tensor",
    "torch.distributed.reduce": "tensor",
    "torch.distributed.all_to_all": "output_tensor_list",
    "torch.distributed.all_to_all_single": "output",
    "torch.distributed.recv": "tensor",
    "torch.distributed.irecv": "tensor",
}
#: The keywords of collectives' tensor arguments (the others are options: group, op, src, ...).
COLLECTIVE_TENSOR_KEYWORDS = frozenset(
    {"tensor", "output", "input", "tensor_list", "output_tensor", "input_tensor",
     "output_tensor_list", "input_tensor_list", "scatter_list", "gather_list"}
)
ALWAYS_ASYNC_COLLECTIVES = {"torch.distributed.isend", "torch.distributed.irecv"}
#: Blocks the host until the current stream's work is done (unless ``async_op=True``).
BARRIER = "torch.distributed.barrier"
#: Tests that hold whenever there is CUDA work to speak of.
DEVICE_PRESENT = frozenset({"torch.cuda.is_available", "torch.cuda.is_initialized"})
#: Flags that say the program chose the GPU (``if args.use_cuda:``), read like ``DEVICE_PRESENT``:
#: where they are false, the program runs on the CPU.
DEVICE_CHOSEN_FLAGS = frozenset(
    {"use_cuda", "use_gpu", "cuda_available", "cudaAvailable", "gpu_available", "has_cuda"}
)
#: The same as plain variables only: ``tensor.is_cuda`` says where one tensor lives, not that
#: nothing runs on the GPU where it is false.
DEVICE_CHOSEN_NAMES = frozenset({"is_cuda", "on_cuda", "is_gpu", "on_gpu"})
#: Functions that write tensors to a file: CUDA tensors are first copied to the host (blocking).
#: ``torch.onnx.export`` also runs the model to trace it, then writes its weights.
SERIALIZERS = frozenset(
    {
        "torch.save",
        "torch.jit.save",
        "torch.export.save",
        "torch.onnx.export",
        "safetensors.torch.save_file",
        "safetensors.torch.save_model",
    }
)
#: Functions of other frameworks that block the host until the device's work is done
#: (``xm.wait_device_ops()`` in PyTorch/XLA training scripts, before an end reading of a clock).
OTHER_HOST_BARRIERS = frozenset({"torch_xla.core.xla_model.wait_device_ops"})
#: Point-to-point operations: ProcessGroupNCCL runs them on streams of their own, apart from the
#: group's collectives.
POINT_TO_POINT = frozenset(
    f"torch.distributed.{name}" for name in ("send", "recv", "isend", "irecv")
)

#: Wrappers that share the tensor they are given: ``nn.Parameter(t)`` is ``t``'s storage under
#: another type, made without a kernel or a host read (``requires_grad`` is metadata).
ALIASING_WRAPPERS = frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer"}
)

#: Python's scalar types: no tensor (nor array) is an instance of one (``isinstance(loss,
#: float)``), and a parameter annotated with one holds a number or a string.
PYTHON_SCALARS = frozenset({"int", "float", "bool", "str", "bytes", "complex"})

#: Functions that wrap a module or a function into another callable (``self.model =
#: torch.compile(self.model)``) without running it: no device work, and what they return is no
#: tensor (``TRACING_CALLS`` run it).
CALLABLE_WRAPPERS = frozenset(
    {"torch.compile", "torch.jit.script", "torch.jit.freeze", "torch.jit.optimize_for_inference"}
)
#: Functions that run a module on example inputs to build another callable from it: its kernels
#: (and any synchronization in its forward) run there, and what they return is no tensor.
TRACING_CALLS = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.export.export"})

#: torch classes whose instances are no tensors, whatever device they name: building one is no
#: device work (`torch.Generator(device="cuda")` handed to a pipeline is not a CUDA tensor).
NON_TENSOR_OBJECTS = frozenset(
    {"torch.Generator", "torch.device", "torch.Size", "torch.finfo", "torch.iinfo"}
)

TENSOR_FACTORIES = {
    f"torch.{name}"
    for name in (
        "empty",
        "zeros",
        "ones",
        "full",
        "rand",
        "randn",
        "randint",
        "randperm",
        "arange",
        "linspace",
        "tensor",
        "as_tensor",
        "from_numpy",
        "empty_strided",
        "eye",
        "normal",
    )
}
LIKE_FACTORIES = {f"torch.{n}_like" for n in ("empty", "zeros", "ones", "full", "rand", "randn")}
#: The legacy typed constructors (``torch.FloatTensor(n)``, ``torch.LongTensor([1, 2])``): they
#: make host tensors (the ``torch.cuda.*Tensor`` ones are not modelled).
LEGACY_HOST_TENSORS = frozenset(
    f"torch.{kind}Tensor"
    for kind in (
        "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool", ""
    )
)

#: Tensor methods that return a view (same storage, no data read).
VIEW_METHODS = {
    "view",
    "view_as",
    "reshape",
    "narrow",
    "transpose",
    "t",
    "permute",
    "expand",
    "expand_as",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "detach",
    "as_strided",
    "chunk",
    "split",
    "tensor_split",
    "unbind",
    "select",
    "diagonal",
    "movedim",
    "swapaxes",
    "unfold",
    "real",
    "imag",
    "__getitem__",
    "requires_grad_",
    "contiguous",
    # In place, metadata only: point the tensor at a storage, or restride it; no kernel runs.
    "set_",
    "as_strided_",
}
VIEW_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag"}

#: Fields of what a model's forward returns (``model(ids).logits``, a ``transformers`` or
#: ``diffusers`` output): no tensor has them, so the value they are read from is the output
#: object, and they hold tensors the call wrote, on its device.
OUTPUT_FIELDS = frozenset({
    "logits", "last_hidden_state", "pooler_output", "hidden_states", "loss", "sample",
    "prev_sample", "pred_original_sample", "image_embeds", "text_embeds", "predicted_depth",
    "pred_boxes", "pred_masks", "start_logits", "end_logits", "waveform", "spectrogram",
})

#: Tensor methods and attributes that read metadata only.
METADATA = {
    "shape",
    "size",
    "dtype",
    "device",
    "numel",
    "dim",
    "ndim",
    "ndimension",
    "is_cuda",
    "is_pinned",
    "stride",
    "storage_offset",
    "data_ptr",
    "element_size",
    "nbytes",
    "itemsize",
    "requires_grad",
    "is_contiguous",
    "is_floating_point",
    "layout",
    "names",
    "get_device",
    "nelement",
    "untyped_storage",
    "storage",
    "type",
}

#: The metadata that says where a tensor is; the rest of ``METADATA`` (shape, size, dtype...) is
#: the same on any device.
DEVICE_METADATA = frozenset(
    {"device", "is_cuda", "is_pinned", "get_device", "data_ptr", "untyped_storage", "storage", "type"}
)

#: Methods that set a flag on the host and return the object itself: ``model.eval()``,
#: ``net.train(False)``, ``w.requires_grad_(False)``, ``w.detach_()`` launch no kernel and touch no
#: data.
HOST_FLAG_METHODS = frozenset({"eval", "train", "requires_grad_", "detach_"})

#: ``nn.Module`` methods that hand out the module's own tensors without any work:
#: ``model.parameters()`` is the module's storage seen another way, not a new tensor.
MODULE_TENSOR_ACCESSORS = frozenset(
    {"parameters", "named_parameters", "buffers", "named_buffers", "state_dict"}
)

#: Modules whose classes are host objects that keep the tensors they are given:
#: ``torch.optim.SGD(model.parameters())`` and its schedulers launch nothing when built (an
#: optimizer's state is made in its first ``step()``), and later work through them is work on
#: those tensors.
TENSOR_HOLDER_MODULES = ("torch.optim.",)
#: Learning-rate schedulers (under ``torch.optim.`` too): host objects whose ``step()`` sets the
#: optimizer's learning rates, Python numbers; they hold no tensor of their own.
LR_SCHEDULER_MODULES = ("torch.optim.lr_scheduler.",)

#: Operations whose output size depends on the data (``x.nonzero()``, ``torch.unique(x)``,
#: ``torch.where(mask)`` with one argument): on CUDA the size is copied to the host first, so the
#: host waits for the current stream, as for ``.item()``.
SIZE_FROM_DATA = frozenset({"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select"})

#: Methods of ``str`` that no tensor has, and no model either: a value they are called on is host
#: text (``model.transcribe(x)["text"].strip()``), whatever it was taken for. (Not ``encode``,
#: ``decode``, ``translate``, ``join``, ``replace``, ``format`` or ``partition``: models, threads
#: and other objects have methods of those names.)
STR_METHODS = frozenset(
    {
        "capitalize", "casefold", "endswith", "expandtabs", "isalnum", "isalpha", "isascii",
        "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable", "isspace",
        "istitle", "isupper", "ljust", "lower", "lstrip", "removeprefix", "removesuffix", "rfind",
        "rindex", "rjust", "rsplit", "rstrip", "splitlines", "startswith", "strip", "swapcase",
        "upper", "zfill",
    }
)

#: Host threads and processes: building one runs nothing yet, and the object is no tensor
#: (``worker.join()`` waits for host code); what it is handed it keeps for its target.
HOST_WORKERS = frozenset(
    {
        "threading.Thread", "threading.Timer", "multiprocessing.Process",
        "torch.multiprocessing.Process", "concurrent.futures.ThreadPoolExecutor",
        "concurrent.futures.ProcessPoolExecutor",
    }
)

#: Tensor methods that copy device data to the host and block until it is there.
BLOCKING_READS = {"item", "tolist", "numpy", "__bool__", "__float__", "__int__"}
#: Builtins that turn a tensor into a host value (a blocking read for CUDA tensors).
HOST_CONVERSIONS = {"bool", "float", "int", "print", "str", "repr", "format", "complex"}
#: Calls that build a callable from their arguments and run none of them.
CALLABLE_BUILDERS = frozenset({"functools.partial"})
#: Builtins that never touch tensor data.
HOST_BUILTINS = {
    "len",
    "range",
    "isinstance",
    "issubclass",
    "hasattr",
    "getattr",
    "setattr",
    "id",
    "type",
    "enumerate",
    "zip",
    "iter",
    "super",
    "callable",
    "sorted",
    "reversed",
    "dict",
    "set",
    "frozenset",
    "object",
    "vars",
    "dir",
    "hash",
    "divmod",
    "round",
    "abs",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "list",
    "tuple",
    "map",
    "filter",
    "open",
    "globals",
    "locals",
    # A weak reference holds no data and reads none (nor does it keep the memory alive).
    "weakref.ref",
    "weakref.proxy",
}
#: Calls on unknown receivers that store their argument (the reference outlives the function).
STORING_METHODS = {"append", "extend", "insert", "add", "put", "put_nowait", "setdefault", "update",
                   "appendleft", "register_buffer", "__setitem__"}
#: Tensor "transfer" methods (device, dtype or pinning changes).
TRANSFER_METHODS = {"to", "cuda", "cpu", "pin_memory", "xpu", "double", "float", "half",
                    "bfloat16", "int", "long", "bool", "type_as"}

#: Torch functions that make CPU tensors unless given a device (not `stack`/`cat`, which follow
#: their inputs).
HOST_FACTORIES = {"frombuffer", "from_file", "from_numpy", "asarray", "tensor", "as_tensor"}

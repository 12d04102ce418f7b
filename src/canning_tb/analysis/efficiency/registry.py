"""Which model reads which call: host operators by name (torch's aten names, on every device), NPU
kernels by their CANN type; a call no model knows gets none ("–" in the views), never a guess."""
from __future__ import annotations

from . import models_attention, models_conv, models_matmul, models_memory
from .inputs import OpInputs
from .models_npu import npu_tensors
from .work import Work

OPERATORS = {**models_memory.OPERATORS, **models_matmul.OPERATORS, **models_conv.OPERATORS,
             **models_attention.OPERATORS}
KERNELS = {**models_matmul.KERNELS, **models_conv.KERNELS, **models_attention.KERNELS}


def work_of(x: OpInputs) -> Work | None:
    """The model's answer for one call, None when no model applies or the inputs do not say enough."""
    if x.op_type:
        model = KERNELS.get(x.op_type)
        found = model(x) if model else None
        if found is not None:
            return found
        tensors = npu_tensors(x)
        if model is not None and tensors is not None:  # a matrix kernel whose shapes did not fit: bytes only
            return tensors.__class__(None, tensors.bytes, tensors.dtype, tensors.model)
        return tensors
    model = OPERATORS.get(x.name)
    return model(x) if model else None

import torch
import torch.distributed as dist

from mylib.comm import reduce_scatter_func  # wraps dist.reduce_scatter_tensor


def linear_backward(ctx, grad_output, weight, group):
    """The all-reduce (async, on the process group's stream) and the reduce-scatter are exclusive."""
    grad_input = grad_output.matmul(weight)
    if ctx.allreduce_dgrad:
        handle = dist.all_reduce(grad_input, group=group, async_op=True)
    if ctx.sequence_parallel:
        assert not ctx.allreduce_dgrad
        sub_grad_input = torch.empty(grad_input.shape, dtype=grad_input.dtype, device=grad_input.device)
        handle = reduce_scatter_func(sub_grad_input, grad_input, group=group, async_op=True)
    handle.wait()
    if ctx.sequence_parallel:
        return sub_grad_input
    return grad_input

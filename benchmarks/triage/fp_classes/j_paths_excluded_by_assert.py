import torch
import torch.distributed as dist


def backward_dgrad(grad_output, weight, allreduce_dgrad, sequence_parallel, group):
    grad_input = grad_output.matmul(weight)
    if allreduce_dgrad:
        handle = dist.all_reduce(grad_input, group=group, async_op=True)
    if sequence_parallel:
        assert not allreduce_dgrad
        sub_grad_input = torch.empty_like(grad_input)
        handle = dist.reduce_scatter_tensor(sub_grad_input, grad_input, group=group, async_op=True)
    handle.wait()
    return grad_input  # the stream-less paths: nothing here races

import torch


class Chunk:
    """Keeps the GPU tensor (`gpu_chunk`) alive while it is offloaded."""

    def __init__(self, tensor):
        self.gpu_chunk = tensor
        self.cpu_chunk = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        self.cpu_chunk.copy_(tensor, non_blocking=True)


class Offloader:
    def __init__(self):
        self.offload_stream = torch.cuda.Stream()

    def run(self, grad):
        staged = grad.float() * 2
        self.offload_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.offload_stream):
            self.chunk = Chunk(staged)
        staged = None
        return torch.empty_like(grad)

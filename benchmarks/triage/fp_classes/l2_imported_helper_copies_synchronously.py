import torch

from mylib.memory_pool import TensorMemoryPool  # store_tensor(): blocking `cpu_tensor.copy_(tensor)`


class Receiver:
    def __init__(self, nccl, device):
        self.nccl = nccl
        self.device = device
        self.recv_stream = torch.cuda.Stream()
        self.pool = TensorMemoryPool()
        self.store = {}

    def recv(self, comm, tensor, src, stream):
        with torch.cuda.stream(stream):
            self.nccl.recv(tensor.data_ptr(), tensor.numel(), src, comm, stream.cuda_stream)
        stream.synchronize()

    def on_put(self, comm, shape, key):
        with torch.cuda.stream(self.recv_stream):
            tensor = torch.empty(shape, device=self.device)
        self.recv(comm, tensor, 1, self.recv_stream)
        addr = self.pool.store_tensor(tensor)
        tensor = (addr, tensor.dtype, tensor.shape)
        self.store[key] = tensor

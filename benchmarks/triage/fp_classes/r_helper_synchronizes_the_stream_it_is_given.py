import torch


class Receiver:
    def __init__(self, nccl, device):
        self.nccl = nccl
        self.device = device
        self.recv_stream = torch.cuda.Stream()
        self.buffer_size = 0
        self.store = {}

    def recv(self, comm, tensor, src, stream):
        with torch.cuda.stream(stream):
            self.nccl.recv(tensor.data_ptr(), tensor.numel(), src, comm, stream.cuda_stream)
        stream.synchronize()

    def on_put(self, comm, shape, key):
        with torch.cuda.stream(self.recv_stream):
            tensor = torch.empty(shape, device=self.device)
        self.recv(comm, tensor, 1, self.recv_stream)
        self.buffer_size += tensor.element_size() * tensor.numel()
        self.store[key] = tensor.clone()
        # The clone runs on the default stream; without this the block could go back to the
        # receive stream's pool while the clone still reads it (a real SYN102 hazard, not the class).
        tensor.record_stream(torch.cuda.current_stream())
        tensor = None

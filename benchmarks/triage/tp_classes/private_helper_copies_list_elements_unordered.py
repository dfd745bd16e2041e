"""Copy service whose same-rank copies run in a private helper on a copy stream that never waits
for the current stream (the caller produced the send tensors on it just before)."""
import torch


class SendOp:
    def __init__(self, tensor, task_id):
        self.tensor = tensor
        self.task_id = task_id


class CopyService:
    def __init__(self):
        self._copy_stream = torch.cuda.Stream()
        self.send_ops = []
        self.recv_ops = []

    def submit_send(self, tensor, task_id):
        self.send_ops.append(SendOp(tensor, task_id))

    def submit_recv(self, tensor, task_id):
        self.recv_ops.append(SendOp(tensor, task_id))

    def _do_local_copies(self):
        with torch.no_grad(), torch.cuda.stream(self._copy_stream):
            for send_op, recv_op in zip(self.send_ops, self.recv_ops):
                recv_op.tensor.copy_(send_op.tensor)  # error: SYN101

    def run(self):
        self._do_local_copies()
        torch.cuda.current_stream().wait_stream(self._copy_stream)

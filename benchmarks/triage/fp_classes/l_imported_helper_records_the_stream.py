import torch

from mylib.moe_utils import maybe_move_tensor_to_cpu  # calls tensor.record_stream(current_stream())


class Dispatcher:
    def __init__(self):
        self.d2h_stream = torch.cuda.Stream()

    def sync_point(self, tokens_per_expert):
        self.num_tokens = tokens_per_expert.sum()
        self.d2h_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.d2h_stream):
            self.num_tokens = maybe_move_tensor_to_cpu(self.num_tokens, record_stream=True)
        self.d2h_event = self.d2h_stream.record_event()

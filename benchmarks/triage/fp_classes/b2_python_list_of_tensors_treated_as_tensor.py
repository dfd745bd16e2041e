import torch.distributed as dist


def my_igather(rank, size, group, sendbuf, recvbuf, root):
    """recvbuf is a Python list with one tensor per rank; this runs on the process group's stream."""
    req = []
    if rank == root:
        for idx in range(size):
            if idx != rank:
                req.append(dist.irecv(recvbuf[idx], src=idx, group=group))
            else:
                recvbuf[rank] = sendbuf
    else:
        req.append(dist.isend(sendbuf, group=group, dst=root))
    return req

"""The C++/CUDA runtime (communicators over NCCL and MPI, buffers, streams); built by a later issue."""

"""Rare draws in Triton kernels run by Triton's CPU interpreter: :mod:`.interception`."""

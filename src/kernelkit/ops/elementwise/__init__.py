"""Element-wise ops: one output element from the elements at the same position of the inputs."""

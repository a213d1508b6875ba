"""Share groups (KIP-932) on the partition leader: the per-(group, partition) delivery state."""

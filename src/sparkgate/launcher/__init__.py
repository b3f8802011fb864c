"""Starting engines (launchers) and deciding which engine hosts which session (placement)."""

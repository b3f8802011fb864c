"""Job manifests and deploy: jobs declared in YAML, reconciled with what runs."""

"""Judge providers: one small class per API family, registered by name."""

"""Judge providers: one small class per API family, each with the descriptor of its provider's
facts, found by the registry without a list of them."""

"""The nouns: a program (its StableHLO, tensor specs, output structure and file form), a
batched program, and the element types they carry."""

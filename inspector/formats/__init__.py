"""Transcript shapes: detect, parse to canonical messages, write back. No Django."""

"""Stoicheia."""

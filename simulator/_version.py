"""The package's version, in a module of its own: the modules that stamp it on runs need not import the package."""

__version__ = "0.1.0"

"""Loading and encoding the data an audit works on (tables now; images and text later)."""

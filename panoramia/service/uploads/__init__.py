"""Contributors' files over the network: resumable, checked uploads, and their deletion."""

"""The docker kind of server: everything teiten knows of it is in this folder."""

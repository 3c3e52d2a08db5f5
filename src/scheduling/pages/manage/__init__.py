"""The manage view (a manage launch): every schedule of the installation, by what needs
doing."""

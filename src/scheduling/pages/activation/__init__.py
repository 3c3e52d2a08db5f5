"""What Dee Wan core and the operator call to install the plugin: the manifest, activation
and rotation, activation codes."""

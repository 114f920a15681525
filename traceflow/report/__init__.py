"""The last stage: matplotlib figures and HTML reports of measured and predicted traffic.
May import every analytics stage; nothing imports it but the CLI and experiments."""

"""Writes one marker file through a dynamic provider and exports what it wrote."""

import pulumi
from marker_file import MarkerFile

config = pulumi.Config()
marker = MarkerFile("marker", path=config.require("path"), content=config.require("content"))
pulumi.export("path", marker.path)
pulumi.export("content", marker.content)

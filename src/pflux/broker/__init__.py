"""The broker: message routing, the local connector, and the instance that hosts the services."""

"""The manage view's Notifications: endpoints, their deliveries, and the pages that ask
before a rotation or a delete."""

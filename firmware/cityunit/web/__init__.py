"""The players' page: the unit on every phone at the table, served over the LAN.

A front end like the console (attached to the Board, fed by the loop after each step),
on a thread of its own running an asyncio loop: one thread for any number of phones,
asleep while nobody watches. `table` is what the page shows, `feed` the messages every
phone reads from, `http` the requests a phone may make, `server` the front end itself,
`page/` the page's own files.
"""

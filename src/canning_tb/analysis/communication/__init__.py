"""Communication: the collectives of a window (`collectives`), CANN's own measurements on Ascend
(`ascend`), and wait / transfer, the one definition per call, step and window (`wait_transfer`)."""

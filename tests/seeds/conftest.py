"""The seed examples as the pages print them. This process imported raycomp's modules before them (tests/conftest.py);
test_seed_import_order.py runs them in a fresh process that imports torchvision first."""

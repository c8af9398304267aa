"""The source every prefetcher module quotes (Python only)."""
MANUAL = ("Intel 64 and IA-32 Architectures Optimization Reference Manual (order no. 248966), "
          "June 2016 edition, §2.3.5.4 \"Data Prefetching\" (Sandy Bridge microarchitecture; "
          "the Haswell and Skylake server chapters before it keep these prefetchers), read as "
          "quoted in two public secondary texts (the manual's PDF was not in the store): a "
          "blog post on Coffee Lake prefetching citing 'Chapter 2.3.5.4' of the 2016 edition, "
          "and a Stack Overflow answer citing 'Section 2.3.5.4 (Data Prefetching)'")

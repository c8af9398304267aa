"""The memmap (one 64-byte struct page per 4 KiB page frame) and where it lives.

Follows include/asm-generic/memory_model.h and arch/x86 (SPARSEMEM_VMEMMAP: the struct page
of a pfn is `vmemmap + pfn`, `vmemmap` a kernel variable under KASLR), mm/sparse.c
(`pfn_valid`, an inline of include/linux/mmzone.h, looks the pfn's 128 MiB section up through
`__nr_to_section`, SPARSEMEM_EXTREME: the global `struct mem_section **mem_section` (a
pointer since v4.15; read in the v5.10.13 mmzone.h, Rtoax/linux-5.10.13, store id
30843583993), the root pointer, then the section; v5.0's 16-byte struct mem_section
(section_mem_map, pageblock_flags; no CONFIG_PAGE_EXTENSION), recalled) and
drivers/nvdimm/pfn_devs.c `nd_pfn_init` (v5.0, recalled) for a
pmem namespace: `ndctl create-namespace --map=dev` (the default) keeps the namespace's
memmap inside the namespace, after an 8 KiB info block, and its data starts at
ALIGN(8 KiB + 64 x pages, 2 MiB); `--map=mem` puts the memmap in DRAM and the data starts at
ALIGN(8 KiB, 2 MiB) (docs/hardware.md §1.5, docs/kernel-paths.md §1.3).

Assumed, not confirmed at v5.0: the namespace's first struct page at base + 8 KiB. The kernel
fills the memmap from the altmap after the 8 KiB reserve, and on x86-64 with PSE the v5.0
vmemmap_populate takes the hugepage path (seen only in excerpts), whose altmap blocks are
PMD-sized and aligned to their size (altmap_alloc_block_buf, v5.10.13): that would put it at
base + 2 MiB, the memmap then ending exactly at the data offset. Either way each check reads
one memmap line on the same media.

Model departures: kernel virtual addresses (direct map, vmemmap, pmem mapping) are taken as
the physical addresses they map to, so the address of a struct page *is* the address of its
memmap line. Struct page contents are not stored in emulated memory: whether a page is a
slab page and of which cache is kept here in Python (`slab_cache`); the loads of those fields
are emitted for their timing. Every page is order-0 (no compound pages). DRAM-side kernel
structures (mem_section, kmem_caches, slab pages, pmem_device, ...) get fixed addresses from
`kalloc`, a bump allocator in a kernel-data area of DRAM.
"""
PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
STRUCT_PAGE_BYTES = 64
SECTION_SHIFT = 27                 # SECTION_SIZE_BITS, x86-64: 128 MiB sections
SECTIONS_PER_ROOT = PAGE_SIZE // 16  # SPARSEMEM_EXTREME: a page of 16-byte mem_sections
PFN_INFO_BYTES = 8192              # nd_pfn: the info block before the memmap (SZ_8K)
PFN_ALIGN = 2 << 20                # nd_pfn default alignment (PMD size)
KERNEL_DATA_BYTES = 64 << 20
PMEM_MAPS = ("dev", "mem")


def align_up(x, a):
    return (x + a - 1) // a * a


class Memmap:
    """Where the struct pages of every region live, for one machine's memory map.

    regions: the machine's regions (dicts with name, base, size_bytes, media, node,
    privilege); persistence: media name -> its persistence domain ("none": volatile).
    Supervisor regions on persistent media are namespaces; `pmem_map` is ndctl's --map: "dev" (memmap in the namespace) or "mem" (in
    DRAM). The DRAM-resident memmap and the kernel-data area take the top of the first
    supervisor DRAM region of node 0; nothing else may be placed there.
    """

    def __init__(self, regions, persistence, pmem_map="dev"):
        if pmem_map not in PMEM_MAPS:
            raise ValueError(f"pmem_map must be one of {PMEM_MAPS}, not {pmem_map!r}")
        self.pmem_map = pmem_map
        self.regions = sorted(regions, key=lambda r: r["base"])
        volatile = {r["name"]: persistence[r["media"]] == "none" for r in self.regions}
        self.namespaces = [r for r in self.regions
                           if not volatile[r["name"]] and r["privilege"] == "supervisor"]
        home = [r for r in self.regions if volatile[r["name"]] and r["node"] == 0
                and r["privilege"] == "supervisor"]
        if not home:
            raise ValueError("the memmap model needs a supervisor volatile DRAM region on node 0")
        home = home[0]
        in_dram = [r for r in self.regions if r not in self.namespaces or pmem_map == "mem"]
        dram_bytes = align_up(sum(r["size_bytes"] for r in in_dram) // PAGE_SIZE
                              * STRUCT_PAGE_BYTES, PFN_ALIGN)
        top = home["base"] + home["size_bytes"]
        area = top - dram_bytes - KERNEL_DATA_BYTES
        if area < home["base"]:
            raise ValueError(f"region {home['name']!r} ({home['size_bytes']} bytes) cannot hold "
                             f"the {dram_bytes}-byte DRAM memmap and the kernel-data area")
        self.reserved = (area, top)
        self._memmap = {}          # region name -> address of the struct page of its first pfn
        at = top - dram_bytes
        for r in in_dram:
            self._memmap[r["name"]] = at
            at += r["size_bytes"] // PAGE_SIZE * STRUCT_PAGE_BYTES
        for r in self.namespaces:
            if pmem_map == "dev":
                self._memmap[r["name"]] = r["base"] + PFN_INFO_BYTES
        self._kdata = area
        self.slab_cache = {}       # struct page address -> KmemCache of a slab page
        self.vmemmap_base = self.kalloc(8)    # the kernel variable `vmemmap` (KASLR)
        max_pfn = max(r["base"] + r["size_bytes"] for r in self.regions) >> PAGE_SHIFT
        roots = -(-(max_pfn >> (SECTION_SHIFT - PAGE_SHIFT)) // SECTIONS_PER_ROOT) or 1
        self.mem_section = self.kalloc(8 * roots)
        self.section_roots = self.kalloc(PAGE_SIZE * roots, PAGE_SIZE)
        self.mem_section_var = self.kalloc(8)     # the variable `mem_section`: the roots array

    def kalloc(self, nbytes, align=64):
        """A fixed kernel address for `nbytes` of kernel data in DRAM."""
        addr = align_up(self._kdata, align)
        if addr + nbytes > self.reserved[0] + KERNEL_DATA_BYTES:
            raise ValueError(f"kernel-data area ({KERNEL_DATA_BYTES} bytes) is full")
        self._kdata = addr + nbytes
        return addr

    def region_of(self, addr):
        """The region holding addr, or None."""
        for r in self.regions:
            if r["base"] <= addr < r["base"] + r["size_bytes"]:
                return r
        return None

    def data_offset(self, namespace):
        """Bytes from the namespace's start to its first data byte (nd_pfn_init)."""
        pages = namespace["size_bytes"] // PAGE_SIZE
        if self.pmem_map == "dev":
            return align_up(PFN_INFO_BYTES + STRUCT_PAGE_BYTES * pages, PFN_ALIGN)
        return align_up(PFN_INFO_BYTES, PFN_ALIGN)

    def pfn_to_page(self, pfn):
        """Address of the struct page of `pfn` (which must be in a region)."""
        r = self.region_of(pfn << PAGE_SHIFT)
        if r is None:
            raise ValueError(f"pfn {pfn:#x} is in no region: it has no struct page")
        return self._memmap[r["name"]] + ((pfn - (r["base"] >> PAGE_SHIFT)) * STRUCT_PAGE_BYTES)

    def page_address(self, page):
        """The address of the page frame whose struct page is at `page`."""
        for r in self.regions:
            first = self._memmap[r["name"]]
            if first <= page < first + r["size_bytes"] // PAGE_SIZE * STRUCT_PAGE_BYTES:
                return r["base"] + (page - first) // STRUCT_PAGE_BYTES * PAGE_SIZE
        raise ValueError(f"{page:#x} is not the address of a struct page")


def pfn_valid(p, mm, pfn):
    """mmzone.h: the pfn's mem_section must exist and have a memmap. Emits three dependent
    loads: the global `mem_section`, the root pointer through it, the section through that."""
    nr = pfn >> (SECTION_SHIFT - PAGE_SHIFT)
    root, idx = divmod(nr, SECTIONS_PER_ROOT)
    p.load(mm.mem_section_var)
    p.load(mm.mem_section + 8 * root, dependent=True)
    p.load(mm.section_roots + PAGE_SIZE * root + 16 * idx, dependent=True)
    return mm.region_of(pfn << PAGE_SHIFT) is not None


def virt_addr_valid(p, mm, addr):
    """arch/x86/mm/physaddr.c __virt_addr_valid: in the direct map and pfn_valid()."""
    if addr < 0:
        return False
    return pfn_valid(p, mm, addr >> PAGE_SHIFT)


def virt_to_head_page(p, mm, addr):
    """page = vmemmap + pfn (a load of `vmemmap`), then compound_head(page) reads
    page->compound_head (offset 8). Returns the struct page's address."""
    page = mm.pfn_to_page(addr >> PAGE_SHIFT)
    p.load(mm.vmemmap_base)
    p.load(page + 8, dependent=True)
    return page


def PageSlab(p, mm, page):
    """Reads page->flags (offset 0, the same 64-byte line as compound_head)."""
    p.load(page)
    return page in mm.slab_cache

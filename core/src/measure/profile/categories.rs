//! The category table: every profile sample lands in exactly one of these, by the function
//! it was taken in (its leaf).
//!
//! Rules, in the order they apply:
//! 1. A sample of an io_uring helper thread of the tool (comm `iou-wrk-*` for io-wq,
//!    `iou-sqp-*` for SQPOLL) is `io_uring`, whatever it ran: that thread exists only
//!    because the tool uses io_uring, so all its time is the tool's. A sample of one of
//!    ringperf's threads that move no data ([`Runner::ToolHelper`]: the classic loops'
//!    watcher, the profile's drain thread, the control threads) is `tool-threads`.
//! 2. A sample of the tool in user mode is `tool-user`; of another process, `other-user`.
//! 3. Otherwise the kernel leaf decides: the first [`Category`] whose rules match it.
//! 4. Generic leaves ([`GENERIC`]: uncontended lock and unlock, memcpy/memset, the slab
//!    allocator, RCU and preemption bookkeeping, user-copy primitives, return thunks) say
//!    what kind of work it was but not whose: they are charged to the first caller up the
//!    stack that is not generic. `rep_movs_alternative` under `skb_copy_datagram_iter` is a
//!    payload copy (data copy); a `memcpy` under `io_submit_sqes` is io_uring's; a
//!    `kmem_cache_alloc` under `__alloc_skb` is skb allocation. Only when the whole stack is
//!    generic does the leaf's own fallback category apply. Contended locks (the slow paths)
//!    are not generic: waiting for a lock is a cost of its own, and it is `locks`.
//! 5. A wake-up (a scheduler leaf under `try_to_wake_up`, `wake_up_*`, ...) is io_uring's
//!    when io_uring asked for it: an io_uring function is on the stack and no socket wake
//!    callback is ([`of_kernel_stack`]). The wake-up of a task waiting for a socket (under
//!    `sock_def_readable` and its kin) stays `scheduler` whatever waits: a blocked
//!    `recv(2)` and a ring waiting for its completion are both woken once per arrival, and
//!    that wake-up belongs to the network path for every tool alike.
//! 6. Nothing matched: `other-kernel`.
//! 7. The harness categories ([`Category::is_tool`]: `tool-user`, `tool-threads`,
//!    `io_uring`, `syscall`) are this tool's only: another process's syscall entry or
//!    io_uring code is `other-kernel`.

use serde::{Deserialize, Serialize};

/// One category: an id that JSON and keyval use, what the human report prints, and what it
/// covers (docs/figures.md lists the same).
/// The serde names are the table's ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Category {
    #[serde(rename = "tool-user")]
    ToolUser,
    #[serde(rename = "tool-threads")]
    ToolThreads,
    #[serde(rename = "io_uring")]
    IoUring,
    #[serde(rename = "syscall")]
    Syscall,
    #[serde(rename = "socket")]
    Socket,
    #[serde(rename = "tcp")]
    Tcp,
    #[serde(rename = "udp")]
    Udp,
    #[serde(rename = "ip")]
    Ip,
    #[serde(rename = "alloc")]
    SkbAlloc,
    #[serde(rename = "copy")]
    Copy,
    #[serde(rename = "checksum")]
    Checksum,
    #[serde(rename = "device")]
    Device,
    #[serde(rename = "qdisc")]
    Qdisc,
    #[serde(rename = "scheduler")]
    Scheduler,
    #[serde(rename = "interrupts")]
    Interrupts,
    #[serde(rename = "locks")]
    Locks,
    #[serde(rename = "idle")]
    Idle,
    #[serde(rename = "other-user")]
    OtherUser,
    #[serde(rename = "other-kernel")]
    OtherKernel,
}

/// A category's row of the table.
pub struct CategoryInfo {
    pub category: Category,
    /// Its id in JSON and keyval names.
    pub id: &'static str,
    /// What the human report calls it.
    pub label: &'static str,
    /// What it covers.
    pub covers: &'static str,
    /// Kernel function names that fall into it: `"name"` exact, `"prefix*"`, `"*suffix"`.
    pub functions: &'static [&'static str],
}

/// THE table. Order matters: a leaf goes to the first row with a matching rule, so narrow
/// rules (`io_schedule`, `tcp4_gro_receive`) come before broad prefixes (`io_*`, `tcp_*`).
pub const TABLE: &[CategoryInfo] = &[
    CategoryInfo {
        category: Category::Idle,
        id: "idle",
        label: "idle",
        covers: "the idle loop and halt (not busy CPU: left out of every share)",
        functions: &[
            "default_idle*",
            "cpu_idle*",
            "do_idle",
            "cpuidle_*",
            "acpi_idle*",
            "intel_idle*",
            "mwait_idle*",
            "native_safe_halt",
            "pv_native_safe_halt",
            "arch_cpu_idle*",
            "poll_idle",
            "cpu_startup_entry",
            "default_enter_idle",
            "tick_nohz_idle_*",
            "hlt_play_dead",
        ],
    },
    CategoryInfo {
        category: Category::ToolUser,
        id: "tool-user",
        label: "tool user space",
        covers: "the tool's processes running in user mode (ringperf's data workers, a peer's client and server), the vDSO's clock reads included",
        functions: &[],
    },
    CategoryInfo {
        category: Category::ToolThreads,
        id: "tool-threads",
        label: "tool helper threads",
        covers: "ringperf's threads that move no data, user and kernel time: the classic loops' watcher, the profile's drain thread, the control threads",
        functions: &[],
    },
    CategoryInfo {
        category: Category::Locks,
        id: "locks",
        label: "locks (contended)",
        covers: "waiting for a contended spinlock, mutex, rwsem or socket lock",
        functions: &[
            "native_queued_spin_lock_slowpath",
            "queued_spin_lock_slowpath",
            "__pv_queued_spin_lock_slowpath",
            "pv_queued_spin_lock_slowpath",
            "__mutex_lock*",
            "mutex_spin_on_owner",
            "osq_lock",
            "rwsem_down_*",
            "__lock_sock",
            "queued_read_lock_slowpath",
            "queued_write_lock_slowpath",
        ],
    },
    CategoryInfo {
        category: Category::Scheduler,
        id: "scheduler",
        label: "scheduler and wakeups",
        covers: "context switches, wakeups, run-queue and load accounting",
        functions: &[
            "io_schedule*",
            "schedule*",
            "__schedule",
            "__cond_resched",
            "try_to_wake_up",
            "wake_up_*",
            "__wake_up*",
            "ttwu_*",
            "enqueue_task*",
            "dequeue_task*",
            "enqueue_entity",
            "dequeue_entity",
            "__enqueue_entity",
            "__dequeue_entity",
            "pick_next_*",
            "pick_eevdf",
            "pick_task*",
            "put_prev_*",
            "set_next_*",
            "update_curr*",
            "update_load_avg",
            "__update_load_avg*",
            "update_cfs_group",
            "update_rq_clock*",
            "reweight_entity",
            "place_entity",
            "avg_vruntime*",
            "switch_mm*",
            "__switch_to*",
            "finish_task_switch*",
            "prepare_task_switch",
            "context_switch",
            "select_task_rq*",
            "select_idle_*",
            "autoremove_wake_function",
            "default_wake_function",
            "woken_wake_function",
            "check_preempt*",
            "wakeup_preempt*",
            "resched_curr*",
            "psi_*",
            "sched_*",
            "__sched_*",
            "newidle_balance",
            "sched_balance_*",
            "load_balance",
            "cpuacct_charge",
            "prepare_to_wait*",
            "finish_wait",
            "wait_woken",
            "schedule_hrtimeout*",
            "raw_spin_rq_*",
            "__raw_spin_lock_irqsave",
            "*_fair",
            // A socket's wake callbacks do nothing but wake its waiters: the time they
            // take (a remote wake-up's IPI, sampled where interrupts come back on) is
            // wake-up cost, not socket bookkeeping.
            "sock_def_readable",
            "sock_def_write_space*",
            "sock_def_wakeup",
            "sock_def_error_report",
            "sk_stream_write_space",
            "ep_poll_callback",
        ],
    },
    CategoryInfo {
        category: Category::Qdisc,
        id: "qdisc",
        label: "qdisc",
        covers: "queueing disciplines between the stack and the device",
        functions: &[
            "__qdisc_*",
            "qdisc_*",
            "sch_direct_xmit",
            "dev_qdisc_*",
            "__dev_xmit_skb",
            "pfifo_*",
            "fq_*",
            "fq_codel_*",
            "htb_*",
            "tbf_*",
            "mq_*",
            "netem_*",
        ],
    },
    CategoryInfo {
        category: Category::Device,
        id: "device",
        label: "device, NAPI, softirq",
        covers: "driver transmit and receive, NAPI polling, GRO, the backlog and softirq dispatch",
        functions: &[
            "net_rx_action",
            "net_tx_action",
            "__napi_poll",
            "napi_*",
            "__napi_*",
            "process_backlog",
            "enqueue_to_backlog",
            "__netif_*",
            "netif_*",
            "dev_gro_receive",
            "gro_*",
            "__gro_*",
            "skb_gro_*",
            "inet_gro_*",
            "ipv6_gro_*",
            "tcp4_gro_*",
            "tcp6_gro_*",
            "tcp_gro_*",
            "udp4_gro_*",
            "udp_gro_*",
            "__skb_gro_*",
            "dev_hard_start_xmit",
            "skb_clone_tx_timestamp",
            "xmit_one",
            "__dev_queue_xmit",
            "dev_queue_xmit*",
            "validate_xmit_*",
            "netdev_core_pick_tx",
            "netdev_pick_tx",
            "eth_type_trans",
            "loopback_*",
            "veth_*",
            "virtnet_*",
            "virtqueue_*",
            "vring_*",
            "e1000*",
            "igb_*",
            "ixgbe_*",
            "i40e_*",
            "ice_*",
            "mlx4_*",
            "mlx5*",
            "gve_*",
            "ena_*",
            "vmxnet3_*",
            "bnxt_*",
            "__do_softirq",
            "handle_softirqs",
            "do_softirq*",
            "__irq_exit_rcu",
            "run_ksoftirqd",
            "skb_defer_free_flush",
            "get_rps_cpu",
            "rps_*",
            "dev_*",
            "__dev_*",
        ],
    },
    CategoryInfo {
        category: Category::Checksum,
        id: "checksum",
        label: "checksum",
        covers: "software checksums (with or without the copy they ride on)",
        functions: &[
            "csum_*",
            "__csum*",
            "do_csum",
            "skb_checksum*",
            "__skb_checksum*",
            "ip_compute_csum",
            "ip_fast_csum",
            "csum_partial*",
        ],
    },
    CategoryInfo {
        category: Category::Copy,
        id: "copy",
        label: "data copy",
        covers: "moving payload between user memory and socket buffers",
        functions: &[
            "_copy_to_iter",
            "_copy_from_iter*",
            "copy_to_iter",
            "copy_from_iter*",
            "__copy_to_iter",
            "__copy_from_iter*",
            "copy_page_to_iter",
            "copy_page_from_iter*",
            // Hardened usercopy's checks of the user buffer, made on every copy.
            "__check_object_size",
            "check_heap_object",
            "check_stack_object",
            "__virt_addr_valid",
            "skb_copy_datagram_iter",
            "__skb_datagram_iter",
            "simple_copy_to_iter",
            "skb_copy_datagram_from_iter",
            "skb_copy_to_page_nocache",
            "skb_do_copy_data_nocache",
            "skb_copy_bits",
            "skb_copy_and_csum_*",
            "zerocopy_sg_from_iter",
            "__zerocopy_sg_from_iter",
        ],
    },
    CategoryInfo {
        category: Category::SkbAlloc,
        id: "alloc",
        label: "skb and page alloc/free",
        covers: "socket buffers and pages: allocation, cloning, freeing",
        functions: &[
            "__alloc_skb",
            "alloc_skb*",
            "__napi_alloc_skb",
            "napi_alloc_skb",
            "__build_skb*",
            "build_skb*",
            "kfree_skb*",
            "__kfree_skb*",
            "consume_skb",
            "__consume_stateless_skb",
            "skb_release_*",
            "skb_free_head",
            "kfree_skbmem",
            "skb_attempt_defer_free",
            "skb_clone",
            "__skb_clone",
            "__copy_skb_header",
            "skb_put",
            "skb_push",
            "skb_pull",
            "pskb_expand_head",
            "page_frag_*",
            "__page_frag_*",
            "skb_page_frag_refill",
            "sk_page_frag_refill",
            "alloc_pages*",
            "__alloc_pages*",
            "__folio_alloc*",
            "folio_alloc*",
            "get_page_from_freelist",
            "rmqueue*",
            "__rmqueue*",
            "free_unref_page*",
            "free_unref_folios",
            "__free_pages*",
            "free_pages*",
            "__put_page",
            "__folio_put*",
            "free_pcppages_bulk",
            "napi_skb_cache_*",
            "skb_splice_from_iter",
            "skb_append_pagefrags",
        ],
    },
    CategoryInfo {
        category: Category::Udp,
        id: "udp",
        label: "UDP",
        covers: "UDP send and receive, socket lookup, GSO segmentation",
        functions: &["udp_*", "__udp*", "udp4_*", "udp6_*", "udpv6_*", "__skb_recv_udp", "skb_consume_udp"],
    },
    CategoryInfo {
        category: Category::Tcp,
        id: "tcp",
        label: "TCP",
        covers: "TCP send and receive, ACKs, timers, congestion control, demux",
        functions: &[
            "tcp_*",
            "__tcp_*",
            "tcp4_*",
            "tcp6_*",
            "tcp_v4_*",
            "tcp_v6_*",
            "inet_csk_*",
            "__inet_lookup*",
            "inet_lookup*",
            "inet_ehashfn",
            "inet6_ehashfn",
            "bbr_*",
            "cubictcp_*",
            "bictcp_*",
            "minmax_running_*",
            "sk_stream_*",
            "sk_forced_mem_schedule",
            "__sk_mem_*",
            "sk_mem_*",
            "mptcp_*",
        ],
    },
    CategoryInfo {
        category: Category::Ip,
        id: "ip",
        label: "IP, routing, netfilter",
        covers: "IPv4/IPv6 input and output, routing, neighbours, netfilter, ICMP",
        functions: &[
            "ip_*",
            "__ip_*",
            "ip6_*",
            "__ip6_*",
            "ipv6_*",
            "ipv4_*",
            "inet_gso_*",
            "inet_gro_*",
            "fib_*",
            "__fib_*",
            "fib6_*",
            "dst_*",
            "__dst_*",
            "rt_*",
            "ipv4_dst_*",
            "neigh_*",
            "__neigh_*",
            "___neigh_*",
            "arp_*",
            "icmp_*",
            "icmpv6_*",
            "nf_*",
            "__nf_*",
            "nft_*",
            "ipt_*",
            "ip6t_*",
            "raw_local_deliver",
            "raw_v4_input",
            "skb_gso_*",
            "__skb_gso_*",
            "skb_segment*",
        ],
    },
    CategoryInfo {
        category: Category::Socket,
        id: "socket",
        label: "socket layer",
        covers: "the socket calls and their bookkeeping above TCP and UDP",
        functions: &[
            "sock_*",
            "__sock_*",
            "sk_*",
            "__sk_*",
            "lock_sock*",
            "release_sock",
            "inet_sendmsg",
            "inet_recvmsg",
            "inet6_sendmsg",
            "inet6_recvmsg",
            "inet_send_prepare",
            "__sys_sendto",
            "__sys_recvfrom",
            "__sys_sendmsg",
            "__sys_recvmsg",
            "___sys_sendmsg",
            "___sys_recvmsg",
            "____sys_sendmsg",
            "____sys_recvmsg",
            "sockfd_lookup*",
            "security_socket_*",
            "apparmor_socket_*",
            "selinux_socket_*",
            "bpf_lsm_socket_*",
            "move_addr_to_*",
            "__skb_wait_for_more_packets",
            "__skb_try_recv_*",
            "__skb_recv_*",
            "skb_recv_*",
            "skb_free_datagram*",
            "security_sk_*",
            "bpf_skops_*",
            "cgroup_bpf_*",
            "__cgroup_bpf_*",
            "mem_cgroup_charge_skmem",
            "mem_cgroup_uncharge_skmem",
        ],
    },
    CategoryInfo {
        category: Category::IoUring,
        id: "io_uring",
        label: "io_uring machinery",
        covers: "submission, completion, task work, poll arming and the wake-ups it asks for, io-wq and SQPOLL threads",
        functions: &[
            "io_*",
            "__io_*",
            "io_uring_*",
            "__io_uring_*",
            "__x64_sys_io_uring_*",
            "__arm64_sys_io_uring_*",
            "__do_sys_io_uring_*",
            "tctx_task_work*",
            "task_work_run",
            "io_wq_*",
            "io_worker_*",
            "create_io_thread",
        ],
    },
    CategoryInfo {
        category: Category::Interrupts,
        id: "interrupts",
        label: "interrupts",
        covers: "hard interrupt entry, handlers, timers and IPIs, and the sampling interrupt itself",
        functions: &[
            "asm_sysvec_*",
            "sysvec_*",
            "__sysvec_*",
            "asm_common_interrupt",
            "common_interrupt",
            "irq_*",
            "__irq_*",
            "handle_irq*",
            "handle_edge_irq",
            "handle_fasteoi_irq",
            "__handle_irq*",
            "irqentry_*",
            "hrtimer_*",
            "__hrtimer_*",
            "tick_*",
            "update_process_times",
            "native_apic_*",
            "x2apic_*",
            "lapic_next_*",
            "__smp_call_*",
            "smp_call_*",
            "generic_smp_call_*",
            "flush_smp_call_function_queue",
            "__flush_smp_call_function_queue",
            "vp_interrupt",
            "vp_vring_interrupt",
            "perf_*",
            "__perf_*",
        ],
    },
    CategoryInfo {
        category: Category::Syscall,
        id: "syscall",
        label: "syscall entry/exit",
        covers: "the tool's way into the kernel and back: syscall entry and return (mitigations, rseq, FPU restore, signal delivery), dispatch and the per-call descriptor lookups",
        functions: &[
            "entry_SYSCALL_64*",
            "entry_SYSRETQ*",
            "do_syscall_64",
            "syscall_return_via_sysret",
            "syscall_exit_to_user_mode*",
            "syscall_enter_from_user_mode*",
            "syscall_exit_work",
            "syscall_trace_enter",
            "exit_to_user_mode*",
            "blkcg_maybe_throttle_current",
            "arch_exit_to_user_mode_prepare",
            "resume_user_mode_work",
            "__x64_sys_*",
            "x64_sys_call",
            "__x64_sys_call",
            "__do_sys_*",
            "__arm64_sys_*",
            "el0_svc*",
            "invoke_syscall",
            "fdget*",
            "__fdget*",
            "fput",
            "__fget*",
            "fget*",
            // Per-call filters a host may add to every system call.
            "__secure_computing",
            "__seccomp_filter",
            "seccomp_run_filters",
            "__audit_syscall_*",
            // Spectre-class mitigations on entry (return thunks are generic: they run on
            // every return in the kernel, and are charged to whoever returned).
            "clear_bhb_loop",
            "entry_ibpb",
            "write_ibpb",
            // The return to user space: rseq's per-thread area, the FPU state, signals
            // (netperf's SIGALRM is its clock, as the watcher thread is the classic loop's).
            "__rseq_handle_notify_resume",
            "rseq_*",
            "__rseq_*",
            "switch_fpu_return",
            "fpregs_restore_userregs",
            "restore_fpregs_from_fpstate",
            "arch_do_signal_or_restart",
            "get_signal",
            "handle_signal",
            "x64_setup_rt_frame",
            "setup_rt_frame",
            "restore_sigcontext",
            "signal_setup_done",
        ],
    },
    CategoryInfo {
        category: Category::OtherUser,
        id: "other-user",
        label: "other user space",
        covers: "other processes running in user mode",
        functions: &[],
    },
    CategoryInfo {
        category: Category::OtherKernel,
        id: "other-kernel",
        label: "other kernel",
        covers: "kernel functions no rule above names",
        functions: &[],
    },
];

/// Leaves that say what kind of work ran but not for whom: charged to the first caller up
/// the stack that is not one of them; the category is the fallback when every frame is.
pub const GENERIC: &[(&str, Category)] = &[
    ("_raw_spin_lock*", Category::Locks),
    ("__raw_callee_save___pv_queued_spin_unlock*", Category::Locks),
    ("__pv_queued_spin_unlock*", Category::Locks),
    ("native_queued_spin_unlock", Category::Locks),
    ("_raw_spin_unlock*", Category::Locks),
    ("_raw_spin_trylock*", Category::Locks),
    ("_raw_read_*", Category::Locks),
    ("_raw_write_*", Category::Locks),
    ("raw_spin_lock*", Category::Locks),
    ("mutex_lock*", Category::Locks),
    ("mutex_unlock", Category::Locks),
    ("down_read*", Category::Locks),
    ("up_read", Category::Locks),
    ("down_write*", Category::Locks),
    ("up_write", Category::Locks),
    ("__rcu_read_lock", Category::OtherKernel),
    ("__rcu_read_unlock", Category::OtherKernel),
    ("rcu_read_unlock_*", Category::OtherKernel),
    ("preempt_count_*", Category::OtherKernel),
    ("check_preemption_disabled", Category::OtherKernel),
    ("__local_bh_enable_ip", Category::OtherKernel),
    ("__local_bh_disable_ip", Category::OtherKernel),
    ("local_bh_enable", Category::OtherKernel),
    ("migrate_disable", Category::OtherKernel),
    ("migrate_enable", Category::OtherKernel),
    ("memcpy*", Category::Copy),
    ("__memcpy*", Category::Copy),
    ("memmove*", Category::Copy),
    ("__memmove*", Category::Copy),
    ("memset*", Category::Copy),
    ("__memset*", Category::Copy),
    ("rep_movs_alternative", Category::Copy),
    ("rep_stos_alternative", Category::Copy),
    ("copy_user_*", Category::Copy),
    ("__copy_user_*", Category::Copy),
    ("_copy_to_user", Category::Copy),
    ("_copy_from_user", Category::Copy),
    ("copy_mc_*", Category::Copy),
    ("kmem_cache_alloc*", Category::SkbAlloc),
    ("kmem_cache_free*", Category::SkbAlloc),
    ("__kmem_cache_*", Category::SkbAlloc),
    ("__kmalloc*", Category::SkbAlloc),
    ("kmalloc*", Category::SkbAlloc),
    ("kfree", Category::SkbAlloc),
    ("__kfree*", Category::SkbAlloc),
    ("__slab_free", Category::SkbAlloc),
    ("___slab_alloc", Category::SkbAlloc),
    ("__slab_alloc*", Category::SkbAlloc),
    ("slab_*", Category::SkbAlloc),
    ("kmalloc_reserve", Category::SkbAlloc),
    ("memcg_slab_*", Category::SkbAlloc),
    ("__memcg_slab_*", Category::SkbAlloc),
    ("obj_cgroup_*", Category::SkbAlloc),
    ("refill_obj_stock", Category::SkbAlloc),
    ("mod_objcg_state", Category::SkbAlloc),
    ("__mod_memcg_*", Category::SkbAlloc),
    ("__mod_lruvec_*", Category::SkbAlloc),
    ("__get_random_u32_below", Category::OtherKernel),
    ("ktime_get*", Category::OtherKernel),
    ("__list_add_valid*", Category::OtherKernel),
    ("__list_del_entry_valid*", Category::OtherKernel),
    ("read_tsc", Category::OtherKernel),
    ("native_sched_clock", Category::OtherKernel),
    ("sched_clock*", Category::OtherKernel),
    // Return thunks (retbleed, SRSO, ITS) run at every return of the kernel's functions.
    ("__x86_return_thunk", Category::OtherKernel),
    ("__x86_indirect_thunk*", Category::OtherKernel),
    ("__x86_indirect_call_thunk*", Category::OtherKernel),
    ("__x86_indirect_jump_thunk*", Category::OtherKernel),
    ("its_return_thunk", Category::OtherKernel),
    ("its_static_thunk", Category::OtherKernel),
    ("retbleed_return_thunk", Category::OtherKernel),
    ("retbleed_untrain_ret", Category::OtherKernel),
    ("entry_untrain_ret", Category::OtherKernel),
    ("srso_*", Category::OtherKernel),
    ("__pi___x86_*", Category::OtherKernel),
    // Bit, list and array lookups any caller makes.
    ("_find_next_bit", Category::OtherKernel),
    ("_find_first_bit", Category::OtherKernel),
    ("rb_insert_color", Category::OtherKernel),
    ("rb_erase", Category::OtherKernel),
    ("llist_reverse_order", Category::OtherKernel),
    ("xa_load", Category::OtherKernel),
    ("import_ubuf", Category::OtherKernel),
    ("xas_*", Category::OtherKernel),
    ("__usecs_to_jiffies", Category::OtherKernel),
    ("__get_user_*", Category::Copy),
    ("__put_user_*", Category::Copy),
];

/// True when `name` matches `rule` (`"x"` exact, `"x*"` prefix, `"*x"` suffix).
fn matches(rule: &str, name: &str) -> bool {
    if let Some(prefix) = rule.strip_suffix('*') {
        name.starts_with(prefix)
    } else if let Some(suffix) = rule.strip_prefix('*') {
        name.ends_with(suffix)
    } else {
        rule == name
    }
}

/// The kernel's local-symbol suffixes (`.isra.0`, `.constprop.0`, `.cold`) say how the
/// compiler split a function, not what it is.
fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// The fallback category of a generic leaf, or `None` for a function that is not generic.
pub fn generic(name: &str) -> Option<Category> {
    let name = base_name(name);
    GENERIC.iter().find(|(rule, _)| matches(rule, name)).map(|&(_, c)| c)
}

/// The category of one kernel function by the table alone (no stack).
pub fn of_function(name: &str) -> Category {
    let name = base_name(name);
    TABLE
        .iter()
        .find(|row| row.functions.iter().any(|rule| matches(rule, name)))
        .map_or(Category::OtherKernel, |row| row.category)
}

/// A socket's readiness check: the socket's code, but when io_uring calls it (arming its
/// poll) it is io_uring's, as the check a blocked `recv(2)` makes is part of that call.
const SOCKET_POLL: &[&str] =
    &["vfs_poll", "sock_poll", "tcp_poll", "udp_poll", "datagram_poll", "tcp_stream_is_readable"];

/// A socket's wake callbacks: what they wake is a task waiting for that socket.
const SOCKET_WAKE: &[&str] = &[
    "sock_def_readable",
    "sock_def_write_space*",
    "sock_def_wakeup",
    "sock_def_error_report",
    "sk_stream_write_space",
];

/// Frames that wake a task up.
const WAKE_UP: &[&str] = &[
    "try_to_wake_up",
    "wake_up_*",
    "__wake_up*",
    "*_wake_function",
    "ttwu_*",
    "kick_process",
    "signal_wake_up_state",
];

fn any_rule(rules: &[&str], name: &str) -> bool {
    let name = base_name(name);
    rules.iter().any(|rule| matches(rule, name))
}

/// The category of a kernel stack, leaf first: the leaf's, or for a generic leaf the
/// first non-generic caller's (rule 4 of the module comment); a socket's poll check that
/// io_uring asked for is io_uring's; so is a wake-up io_uring asked for (rule 5).
pub fn of_kernel_stack<'a>(frames: impl IntoIterator<Item = &'a str>) -> Category {
    let frames: Vec<&str> = frames.into_iter().collect();
    let Some(leaf) = frames.iter().position(|f| generic(f).is_none()) else {
        return frames.first().and_then(|f| generic(f)).unwrap_or(Category::OtherKernel);
    };
    let callers = &frames[leaf..];
    let io_uring = |f: &&str| of_function(f) == Category::IoUring;
    if any_rule(SOCKET_POLL, callers[0]) {
        // The first caller that is neither a poll check nor generic asked for it.
        let asker = callers.iter().find(|f| generic(f).is_none() && !any_rule(SOCKET_POLL, f));
        if asker.is_some_and(io_uring) {
            return Category::IoUring;
        }
    }
    let category = of_function(callers[0]);
    if category == Category::Scheduler {
        // The wake-up's own context: the frames up to the first that is not the
        // scheduler's, io_uring's or generic (an interrupt's entry, TCP, a syscall).
        let context: Vec<&str> = callers
            .iter()
            .copied()
            .take_while(|f| {
                generic(f).is_some() || matches!(of_function(f), Category::Scheduler | Category::IoUring)
            })
            .collect();
        let wakes = context.iter().any(|f| any_rule(WAKE_UP, f));
        let for_a_socket = context.iter().any(|f| any_rule(SOCKET_WAKE, f));
        if wakes && !for_a_socket && context.iter().any(io_uring) {
            return Category::IoUring;
        }
    }
    category
}

/// The thread that carries ringperf's traffic; every other `ringperf-*` thread is a
/// [`Runner::ToolHelper`].
pub const DATA_THREAD: &str = "ringperf-worker";
/// The profile's drain thread: the measurement's own, in whichever process samples
/// (ringperf, or ringperf-bench for a peer), so every profiled tool carries one.
pub const SAMPLER_THREAD: &str = "ringperf-prof";

/// Who ran when a sample was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// The tool's processes (ringperf's data workers; a peer's client and server).
    Tool,
    /// An io_uring helper thread of the tool (`iou-wrk-*`, `iou-sqp-*`).
    IoUringHelper,
    /// A thread of ringperf's that moves no data: the classic loops' watcher
    /// (`ringperf-watch`), the profile's drain thread, the control threads.
    ToolHelper,
    /// Any other task (other processes, kernel threads, the idle task).
    Other,
}

impl Runner {
    /// Who a task is, from its process id and its thread's comm.
    pub fn of(pid: u32, comm: &str, own_pid: u32) -> Runner {
        Runner::among(pid, comm, &[own_pid])
    }

    /// Who a task is when the tool is several processes (a peer's client and server,
    /// profiled by ringperf-bench): any of `tool_pids` is the tool.
    pub fn among(pid: u32, comm: &str, tool_pids: &[u32]) -> Runner {
        let tool = pid != 0 && tool_pids.contains(&pid);
        if comm == SAMPLER_THREAD {
            Runner::ToolHelper
        } else if tool {
            Runner::of_tool_thread(comm)
        } else {
            Runner::Other
        }
    }

    /// Which of the tool's threads a comm names (io_uring's helpers are threads of the
    /// process whose ring made them).
    pub fn of_tool_thread(comm: &str) -> Runner {
        // `iou-wrk-<tid>`; folded stacks name them `iou-wrk`.
        if comm.starts_with("iou-wrk") || comm.starts_with("iou-sqp") {
            Runner::IoUringHelper
        } else if comm.starts_with("ringperf-") && comm != DATA_THREAD {
            Runner::ToolHelper
        } else {
            Runner::Tool
        }
    }
}

/// The category of one sample (rules 1 to 7): `kernel` is its kernel stack, leaf first,
/// empty for a sample taken in user mode.
pub fn of_sample<'a>(runner: Runner, user_mode: bool, kernel: impl IntoIterator<Item = &'a str>) -> Category {
    match (runner, user_mode) {
        (Runner::IoUringHelper, _) => Category::IoUring,
        (Runner::ToolHelper, _) => Category::ToolThreads,
        (Runner::Tool, true) => Category::ToolUser,
        (Runner::Other, true) => Category::OtherUser,
        (Runner::Tool, false) => of_kernel_stack(kernel),
        (Runner::Other, false) => match of_kernel_stack(kernel) {
            c if c.is_tool() => Category::OtherKernel,
            c => c,
        },
    }
}

impl Category {
    /// Its row of [`TABLE`].
    pub fn info(self) -> &'static CategoryInfo {
        TABLE.iter().find(|r| r.category == self).unwrap_or(&TABLE[TABLE.len() - 1])
    }
    pub fn id(self) -> &'static str {
        self.info().id
    }
    pub fn label(self) -> &'static str {
        self.info().label
    }
    /// The categories that are the harness's cost, not the network path's: its user space,
    /// its helper threads, io_uring's machinery, and its way into the kernel and back.
    pub fn is_tool(self) -> bool {
        matches!(self, Category::ToolUser | Category::ToolThreads | Category::IoUring | Category::Syscall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kernel_functions_land_where_expected() {
        let cases = [
            ("tcp_sendmsg_locked", Category::Tcp),
            ("tcp_ack", Category::Tcp),
            ("tcp_v4_rcv", Category::Tcp),
            ("__inet_lookup_established", Category::Tcp),
            ("udp_sendmsg", Category::Udp),
            ("__udp4_lib_rcv", Category::Udp),
            ("ip_finish_output2", Category::Ip),
            ("ip_rcv_core.isra.0", Category::Ip),
            ("nf_hook_slow", Category::Ip),
            ("fib_table_lookup", Category::Ip),
            ("__alloc_skb", Category::SkbAlloc),
            ("kfree_skb_reason", Category::SkbAlloc),
            ("skb_release_data", Category::SkbAlloc),
            ("_copy_to_iter", Category::Copy),
            ("skb_copy_datagram_iter", Category::Copy),
            ("csum_partial", Category::Checksum),
            ("net_rx_action", Category::Device),
            ("__netif_receive_skb_core.constprop.0", Category::Device),
            ("loopback_xmit", Category::Device),
            ("process_backlog", Category::Device),
            ("dev_gro_receive", Category::Device),
            ("tcp4_gro_receive", Category::Device),
            ("__dev_queue_xmit", Category::Device),
            ("__qdisc_run", Category::Qdisc),
            ("pfifo_fast_dequeue", Category::Qdisc),
            ("io_submit_sqes", Category::IoUring),
            ("io_cqring_wait", Category::IoUring),
            ("__io_run_local_work", Category::IoUring),
            ("io_req_task_submit", Category::IoUring),
            ("io_arm_poll_handler", Category::IoUring),
            ("io_wq_worker", Category::IoUring),
            ("io_schedule", Category::Scheduler),
            ("__schedule", Category::Scheduler),
            ("try_to_wake_up", Category::Scheduler),
            ("enqueue_task_fair", Category::Scheduler),
            ("entry_SYSCALL_64_after_hwframe", Category::Syscall),
            ("do_syscall_64", Category::Syscall),
            ("syscall_exit_to_user_mode", Category::Syscall),
            ("exit_to_user_mode_loop", Category::Syscall),
            ("__rseq_handle_notify_resume", Category::Syscall),
            ("__x64_sys_sendto", Category::Syscall),
            ("fdget", Category::Syscall),
            ("arch_do_signal_or_restart", Category::Syscall),
            ("tctx_task_work", Category::IoUring),
            ("__io_arm_poll_handler", Category::IoUring),
            ("io_poll_wake", Category::IoUring),
            ("io_poll_task_func", Category::IoUring),
            ("io_req_task_work_add", Category::IoUring),
            ("__io_req_task_work_add", Category::IoUring),
            ("io_req_local_work_add", Category::IoUring),
            ("__do_sys_io_uring_enter", Category::IoUring),
            ("sock_recvmsg", Category::Socket),
            ("inet_recvmsg", Category::Socket),
            ("release_sock", Category::Socket),
            ("native_queued_spin_lock_slowpath", Category::Locks),
            ("asm_sysvec_apic_timer_interrupt", Category::Interrupts),
            ("hrtimer_interrupt", Category::Interrupts),
            ("pv_native_safe_halt", Category::Idle),
            ("default_idle", Category::Idle),
            ("some_unknown_function", Category::OtherKernel),
        ];
        for (name, want) in cases {
            assert_eq!(of_function(name), want, "{name}");
        }
    }

    #[test]
    fn generic_leaves_take_the_callers_category() {
        // A payload copy.
        let rx = ["rep_movs_alternative", "_copy_to_iter", "simple_copy_to_iter", "__skb_datagram_iter"];
        assert_eq!(of_kernel_stack(rx), Category::Copy);
        // io_uring copying its own structures.
        assert_eq!(of_kernel_stack(["memcpy", "io_submit_sqes"]), Category::IoUring);
        // An uncontended unlock inside TCP is TCP's cost; a contended lock is not.
        assert_eq!(of_kernel_stack(["_raw_spin_unlock_irqrestore", "tcp_sendmsg"]), Category::Tcp);
        // Interrupts come back on at the end of a socket's wake callback: that time is the
        // wake-up (the IPI to the waiter's CPU), whoever delivered the data.
        let wake =
            ["_raw_spin_unlock_irqrestore", "sock_def_readable", "tcp_data_queue", "tcp_rcv_established"];
        assert_eq!(of_kernel_stack(wake), Category::Scheduler);
        assert_eq!(of_kernel_stack(["_raw_spin_unlock_irqrestore", "ep_poll_callback"]), Category::Scheduler);
        assert_eq!(
            of_kernel_stack(["native_queued_spin_lock_slowpath", "_raw_spin_lock", "tcp_sendmsg"]),
            Category::Locks
        );
        // Slab allocation for an skb is skb allocation; for io_uring, io_uring's.
        assert_eq!(of_kernel_stack(["kmem_cache_alloc_node", "__alloc_skb"]), Category::SkbAlloc);
        assert_eq!(of_kernel_stack(["__kmalloc", "io_alloc_async_data"]), Category::IoUring);
        // A return thunk is whoever returned through it, not the syscall path.
        assert_eq!(of_kernel_stack(["its_return_thunk", "sock_def_readable"]), Category::Scheduler);
        assert_eq!(of_kernel_stack(["srso_alias_return_thunk", "tcp_ack"]), Category::Tcp);
        assert_eq!(of_kernel_stack(["__x86_return_thunk", "io_submit_sqes"]), Category::IoUring);
        // rseq's user access on the way back to user space is that way's.
        let rseq = ["__get_user_8", "__rseq_handle_notify_resume", "exit_to_user_mode_loop", "do_syscall_64"];
        assert_eq!(of_kernel_stack(rseq), Category::Syscall);
        // All generic: the leaf's fallback.
        assert_eq!(of_kernel_stack(["memcpy"]), Category::Copy);
        assert_eq!(of_kernel_stack(Vec::<&str>::new()), Category::OtherKernel);
    }

    /// Stacks as a cycles profile sees them (a cpu-clock one charges the time with
    /// interrupts off to where they come back on: the socket's wake callback).
    #[test]
    fn a_socket_wakes_its_reader_for_every_tool_and_io_uring_wakes_its_own() {
        // A blocked recv(2) woken by the data.
        let classic = [
            "_raw_spin_unlock_irqrestore",
            "try_to_wake_up",
            "default_wake_function",
            "woken_wake_function",
            "__wake_up_common",
            "__wake_up_sync_key",
            "sock_def_readable",
            "tcp_data_queue",
            "tcp_rcv_established",
        ];
        assert_eq!(of_kernel_stack(classic), Category::Scheduler);
        // A ring waiting for its completion, woken by the same data through io_uring's poll
        // callback: the wake-up is the network path's, the callback's own work io_uring's.
        let ring = [
            "try_to_wake_up",
            "wake_up_state",
            "io_req_local_work_add",
            "__io_req_task_work_add",
            "__io_poll_execute",
            "io_poll_wake",
            "__wake_up_common",
            "__wake_up_sync_key",
            "sock_def_readable",
            "tcp_data_queue",
        ];
        assert_eq!(of_kernel_stack(ring), Category::Scheduler);
        assert_eq!(of_kernel_stack(ring[2..].iter().copied()), Category::IoUring);
        assert_eq!(of_kernel_stack(ring[5..].iter().copied()), Category::IoUring);
        // Waking an io-wq worker: io_uring's alone.
        let io_wq = [
            "ttwu_do_activate",
            "try_to_wake_up",
            "wake_up_process",
            "io_wq_activate_free_worker",
            "io_wq_enqueue",
            "io_queue_iowq",
            "io_submit_sqes",
            "__do_sys_io_uring_enter",
            "do_syscall_64",
        ];
        assert_eq!(of_kernel_stack(io_wq), Category::IoUring);
        // Waking a completion queue's waiter from task work.
        let cq = [
            "try_to_wake_up",
            "__wake_up_common",
            "__wake_up",
            "io_cqring_wake",
            "tctx_task_work",
            "task_work_run",
        ];
        assert_eq!(of_kernel_stack(cq), Category::IoUring);
        // A timer's wake-up that interrupted a ring's wait is not io_uring's: the interrupt
        // ends the wake-up's context.
        let timer = [
            "try_to_wake_up",
            "hrtimer_wakeup",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "io_cqring_wait",
            "__do_sys_io_uring_enter",
        ];
        assert_eq!(of_kernel_stack(timer), Category::Scheduler);
        // Going to sleep in the ring's wait is the same context switch as in a blocked
        // recv(2): the network path's, like the wake-up that ends it.
        let sleep = [
            "finish_task_switch.isra.0",
            "__schedule",
            "schedule",
            "io_cqring_wait",
            "__do_sys_io_uring_enter",
        ];
        assert_eq!(of_kernel_stack(sleep), Category::Scheduler);
        let blocked = [
            "finish_task_switch.isra.0",
            "__schedule",
            "schedule",
            "schedule_timeout",
            "wait_woken",
            "sk_wait_data",
        ];
        assert_eq!(of_kernel_stack(blocked), Category::Scheduler);
    }

    #[test]
    fn a_socket_poll_check_is_io_urings_when_io_uring_arms_it() {
        let armed = [
            "tcp_poll",
            "sock_poll",
            "vfs_poll",
            "__io_arm_poll_handler",
            "io_arm_poll_handler",
            "io_issue_sqe",
        ];
        assert_eq!(of_kernel_stack(armed), Category::IoUring);
        let generic_leaf = ["_raw_spin_lock", "tcp_poll", "sock_poll", "io_poll_add"];
        assert_eq!(of_kernel_stack(generic_leaf), Category::IoUring);
        // epoll's check, or tcp_poll alone, stays the socket's.
        assert_eq!(
            of_kernel_stack(["tcp_poll", "sock_poll", "ep_item_poll", "ep_send_events"]),
            Category::Tcp
        );
        assert_eq!(of_kernel_stack(["tcp_poll"]), Category::Tcp);
    }

    #[test]
    fn who_ran_decides_before_the_leaf() {
        let own = 4242;
        assert_eq!(of_sample(Runner::of(own, "ringperf", own), true, []), Category::ToolUser);
        assert_eq!(of_sample(Runner::of(17, "bash", own), true, []), Category::OtherUser);
        let helper = Runner::of(own, "iou-wrk-4243", own);
        assert_eq!(of_sample(helper, false, ["tcp_sendmsg_locked"]), Category::IoUring);
        assert_eq!(Runner::of(own, "iou-sqp-4243", own), Runner::IoUringHelper);
        assert_eq!(of_sample(Runner::of(own, "ringperf", own), false, ["tcp_ack"]), Category::Tcp);
        assert_eq!(
            of_sample(Runner::of(0, "swapper/0", own), false, ["pv_native_safe_halt"]),
            Category::Idle
        );
        // The tool's way into the kernel is the tool's; another process's is not.
        let entry = ["do_syscall_64", "entry_SYSCALL_64_after_hwframe"];
        assert_eq!(of_sample(Runner::of(own, "ringperf-worker", own), false, entry), Category::Syscall);
        assert_eq!(of_sample(Runner::of(17, "cargo", own), false, entry), Category::OtherKernel);
        assert_eq!(of_sample(Runner::of(17, "cargo", own), false, ["io_submit_sqes"]), Category::OtherKernel);
        // ... nor are its io_uring helpers.
        assert_eq!(Runner::of(17, "iou-wrk-18", own), Runner::Other);
        // ringperf's threads that move no data, in user and kernel mode.
        for helper in ["ringperf-watch", "ringperf-prof", "ringperf-sessio"] {
            assert_eq!(Runner::of(own, helper, own), Runner::ToolHelper, "{helper}");
            assert_eq!(
                of_sample(Runner::of(own, helper, own), false, ["do_sys_poll"]),
                Category::ToolThreads
            );
            assert_eq!(of_sample(Runner::of(own, helper, own), true, []), Category::ToolThreads);
        }
        assert_eq!(Runner::of(own, DATA_THREAD, own), Runner::Tool);
        // The profile's drain thread is the measurement's in whichever process samples
        // (ringperf-bench, for a peer).
        assert_eq!(Runner::of(17, SAMPLER_THREAD, own), Runner::ToolHelper);
        assert_eq!(Runner::of(17, "ringperf-watch", own), Runner::Other);
    }

    #[test]
    fn every_listed_process_is_the_tool_and_no_other() {
        // A peer profiled by ringperf-bench: its client and its server.
        let peer = [3100, 3200];
        assert_eq!(Runner::among(3100, "netperf", &peer), Runner::Tool);
        assert_eq!(of_sample(Runner::among(3200, "netserver", &peer), true, []), Category::ToolUser);
        assert_eq!(of_sample(Runner::among(3300, "bash", &peer), true, []), Category::OtherUser);
        // In the kernel, a listed process's sample goes by its stack like anyone's.
        assert_eq!(of_sample(Runner::among(3200, "netserver", &peer), false, ["tcp_ack"]), Category::Tcp);
        // The idle task is never the tool, even if a caller lists pid 0.
        assert_eq!(Runner::among(0, "swapper/0", &[0, 3100]), Runner::Other);
        assert_eq!(Runner::among(3100, "netperf", &[]), Runner::Other);
        // `of` is `among` with this process alone.
        assert_eq!(Runner::of(3100, "netperf", 3100), Runner::among(3100, "netperf", &[3100]));
    }

    #[test]
    fn the_table_names_every_category_once() {
        let all = [
            Category::ToolUser,
            Category::ToolThreads,
            Category::IoUring,
            Category::Syscall,
            Category::Socket,
            Category::Tcp,
            Category::Udp,
            Category::Ip,
            Category::SkbAlloc,
            Category::Copy,
            Category::Checksum,
            Category::Device,
            Category::Qdisc,
            Category::Scheduler,
            Category::Interrupts,
            Category::Locks,
            Category::Idle,
            Category::OtherUser,
            Category::OtherKernel,
        ];
        for c in all {
            assert_eq!(TABLE.iter().filter(|r| r.category == c).count(), 1, "{c:?}");
        }
        assert_eq!(TABLE.len(), all.len());
        // The serde name is the table's id.
        for c in all {
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.id()));
        }
        let ids: std::collections::HashSet<_> = TABLE.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), TABLE.len());
    }
}

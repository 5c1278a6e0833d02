"""Built-in domains for the template author: what each generated app is about.

Each entry is a :class:`~a01gym.factory.spec.DomainSpec`; the LLM author may invent others in
the same shape. Variety here (names, columns, nouns) is what keeps an agent from recognising
an app by its surface.
"""

from __future__ import annotations

from a01gym.factory.spec import DomainSpec, EntitySpec

__all__ = ["DOMAINS", "domain"]


def _domain(
    id: str,
    app_name: str,
    description: str,
    tenant_noun: str,
    tenants: tuple[str, str],
    entity: tuple[str, str, str, str, str, str],
    term: str,
    samples: tuple[str, ...],
    archived: str = "archived",
) -> DomainSpec:
    name, plural, label, title, secret, number = entity
    return DomainSpec(
        id=id,
        app_name=app_name,
        description=description,
        tenant_noun=tenant_noun,
        tenant_names=list(tenants),
        entity=EntitySpec(
            name=name,
            plural=plural,
            label=label,
            title_field=title,
            secret_field=secret,
            number_field=number,
            title_samples=[f"{term} {s}" for s in samples],
            search_term=term,
            archived_status=archived,
        ),
    )


DOMAINS: dict[str, DomainSpec] = {
    d.id: d
    for d in (
        _domain(
            "invoices",
            "Ledgerly",
            "Small-business invoicing: companies issue invoices to their customers.",
            "company",
            ("Northwind Traders", "Globex Supply"),
            ("invoice", "invoices", "invoice", "customer", "memo", "amount_cents"),
            "Invoice",
            ("consulting retainer", "hardware order", "annual licence", "support hours", "audit"),
            archived="void",
        ),
        _domain(
            "notes",
            "Quillbox",
            "A team notebook where members keep private and shared notes.",
            "team",
            ("Blue Heron", "Red Kite"),
            ("note", "notes", "note", "heading", "body", "word_count"),
            "Notes",
            ("from standup", "on pricing", "for onboarding", "about vendors", "for retro"),
        ),
        _domain(
            "clinic",
            "CareSlot",
            "Clinic appointment booking for patients and front-desk staff.",
            "clinic",
            ("Riverside Clinic", "Hilltop Practice"),
            ("appointment", "appointments", "appointment", "purpose", "reason", "duration_min"),
            "Visit",
            ("annual checkup", "follow-up", "vaccination", "lab results", "physiotherapy"),
            archived="cancelled",
        ),
        _domain(
            "projects",
            "Trackwise",
            "A project tracker where teams file and triage tasks.",
            "workspace",
            ("Apollo Labs", "Zephyr Studio"),
            ("task", "tasks", "task", "summary", "details", "estimate_hours"),
            "Task",
            ("fix login flow", "migrate database", "write release notes", "update docs", "qa"),
            archived="closed",
        ),
        _domain(
            "fileshare",
            "Dropvault",
            "A document share where members upload and share documents.",
            "organisation",
            ("Acme Legal", "Umbrella Research"),
            ("document", "documents", "document", "filename", "content", "size_bytes"),
            "Doc",
            ("contract draft", "board minutes", "research plan", "budget sheet", "nda"),
        ),
        _domain(
            "hr_records",
            "PeopleDesk",
            "HR records: employee reviews and personnel notes per company.",
            "employer",
            ("Initech", "Hooli"),
            ("review", "reviews", "HR review", "headline", "assessment", "rating"),
            "Review",
            ("mid-year", "probation end", "promotion case", "annual cycle", "exit interview"),
        ),
        _domain(
            "helpdesk",
            "Ticketry",
            "Customer support tickets raised by users of several customer accounts.",
            "customer account",
            ("Contoso", "Fabrikam"),
            ("ticket", "tickets", "support ticket", "subject", "description", "priority"),
            "Ticket",
            ("cannot log in", "billing question", "export broken", "feature request", "slow"),
            archived="resolved",
        ),
        _domain(
            "shop",
            "Cartwheel",
            "An e-shop back office where merchants manage customer orders.",
            "merchant",
            ("Sunny Goods", "Peak Outfitters"),
            ("order", "orders", "order", "item_summary", "shipping_address", "total_cents"),
            "Order",
            ("two mugs", "hiking boots", "gift card", "tent and stove", "coffee beans"),
            archived="fulfilled",
        ),
        _domain(
            "expenses",
            "Spendwise",
            "Expense reports that employees file and finance reviews.",
            "company",
            ("Vandelay Industries", "Kramerica"),
            ("expense", "expenses", "expense report", "purpose", "justification", "amount_cents"),
            "Expense",
            ("client dinner", "conference travel", "taxi", "software licence", "hotel"),
            archived="reimbursed",
        ),
        _domain(
            "lab",
            "Benchlog",
            "A lab notebook where researchers record experiments per research group.",
            "research group",
            ("Curie Lab", "Franklin Group"),
            ("experiment", "experiments", "experiment", "protocol", "observations", "samples"),
            "Run",
            ("pcr batch", "cell culture", "titration", "spectroscopy", "stability test"),
        ),
        _domain(
            "library",
            "Shelfmark",
            "A public library system where members borrow items from their branch.",
            "branch",
            ("Eastside Branch", "Harbour Branch"),
            ("loan", "loans", "loan", "item_title", "borrower_note", "renewals"),
            "Loan",
            (
                "of a cookbook",
                "of a travel guide",
                "of a poetry collection",
                "of a map",
                "of a dvd",
            ),
            archived="returned",
        ),
        _domain(
            "legal",
            "Casefile",
            "A law-firm matter tracker where lawyers keep privileged client matters.",
            "firm",
            ("Pearson Hardman", "Wolfram Hart"),
            ("matter", "matters", "legal matter", "caption", "privileged_notes", "billed_hours"),
            "Matter",
            ("lease dispute", "merger review", "patent filing", "employment claim", "estate plan"),
            archived="closed",
        ),
        _domain(
            "pharmacy",
            "Dispensa",
            "A pharmacy back office where pharmacists record patient prescriptions.",
            "pharmacy",
            ("Greenleaf Pharmacy", "Corner Chemist"),
            (
                "prescription",
                "prescriptions",
                "prescription",
                "drug_name",
                "dosage_notes",
                "refills",
            ),
            "Script",
            ("for antibiotics", "for insulin", "for inhaler", "for statins", "for allergy relief"),
            archived="dispensed",
        ),
        _domain(
            "banking",
            "Paywire",
            "Business banking where account holders schedule transfers to payees.",
            "business",
            ("Dunder Mifflin", "Sabre Corp"),
            ("transfer", "transfers", "transfer", "payee", "routing_details", "amount_cents"),
            "Payment",
            ("to supplier", "for payroll", "for rent", "to tax office", "for utilities"),
            archived="settled",
        ),
        _domain(
            "school",
            "Gradebook",
            "A school portal where teachers grade student submissions per school.",
            "school",
            ("Springfield High", "Shermer High"),
            ("submission", "submissions", "submission", "assignment", "feedback", "points"),
            "Essay",
            ("on photosynthesis", "on the civil war", "on algebra", "on poetry", "on ecosystems"),
            archived="graded",
        ),
        _domain(
            "fleet",
            "Wheelhouse",
            "Fleet maintenance where depots log work orders for their vehicles.",
            "depot",
            ("North Depot", "South Depot"),
            ("work_order", "work_orders", "work order", "vehicle", "mechanic_notes", "odometer_km"),
            "Repair",
            ("brake pads", "oil change", "tyre rotation", "gearbox check", "headlight swap"),
            archived="completed",
        ),
        _domain(
            "realestate",
            "Keyring",
            "A letting agency where agents manage tenancy leases for their offices.",
            "agency office",
            ("Cityside Lettings", "Meadow Homes"),
            ("lease", "leases", "lease", "property", "tenant_contact", "rent_cents"),
            "Lease",
            ("for studio flat", "for garden house", "for loft", "for shop front", "for garage"),
            archived="ended",
        ),
        _domain(
            "grants",
            "Fundline",
            "A grant portal where applicants submit funding applications to foundations.",
            "foundation",
            ("Okafor Trust", "Lindqvist Fund"),
            (
                "application",
                "applications",
                "grant application",
                "project_name",
                "budget_notes",
                "requested_cents",
            ),
            "Grant",
            (
                "for a school garden",
                "for clean water",
                "for a youth choir",
                "for archives",
                "for a clinic",
            ),
            archived="withdrawn",
        ),
    )
}


def domain(domain_id: str) -> DomainSpec:
    """The built-in domain ``domain_id``.

    Raises:
        KeyError: naming the known domains.
    """
    try:
        return DOMAINS[domain_id]
    except KeyError:
        raise KeyError(f"unknown domain {domain_id!r}; known: {', '.join(DOMAINS)}") from None

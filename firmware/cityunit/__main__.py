from cityunit.cli import main

raise SystemExit(main())

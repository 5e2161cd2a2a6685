from spanguard_processor.cli import main

main()
